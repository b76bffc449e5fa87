#!/usr/bin/env bash
# Runs the official MCP conformance suite's server scenarios against one MCP server and writes a
# machine-readable tally.
#
#   gateway/conformance/run.sh URL OUTDIR
#
# URL: the server's Streamable HTTP endpoint (http://127.0.0.1:PORT/mcp). OUTDIR (created):
#   tally.json  {"url", "suite", "version", "total", "passed", "failed",
#                "scenarios": {NAME: {"result": "pass"|"fail", "failures", "warnings",
#                                     "exit", "reason"?}}}
#   tally.tsv   NAME<TAB>pass|fail, one line per scenario
#   raw/        the suite's own results (`-o`): one directory per scenario with checks.json
#   logs/       each scenario's output (NAME.log) and exit status (NAME.rc)
# A scenario passes when none of its checks is a FAILURE (WARNINGs are counted, not failed).
#
# Every server scenario the suite lists is run, one suite process each, so one that hangs is
# cut off (SCENARIO_TIMEOUT seconds, default 60) and the rest still run. That is all of them,
# the two the suite calls pending (json-schema-2020-12, server-sse-polling) included; its
# default "active" suite is the rest. Environment:
#   SCENARIOS="a b"     run only these
#   SCENARIO_TIMEOUT=S  per-scenario limit in seconds
#   CONFORMANCE_BIN=P   the suite's `conformance` executable (default: this directory's
#                       node_modules/.bin/conformance, installed by `npm ci` when absent)
#
# Exit status: 0 when every scenario passed, 1 when some failed (the tally is written either
# way), 2 when the suite could not be run at all.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ $# -ne 2 ]]; then
    echo "usage: $0 URL OUTDIR" >&2
    exit 2
fi
url="$1"
outdir="$2"
scenario_timeout="${SCENARIO_TIMEOUT:-60}"

bin="${CONFORMANCE_BIN:-$here/node_modules/.bin/conformance}"
if [[ ! -x "$bin" ]]; then
    if [[ -n "${CONFORMANCE_BIN:-}" ]]; then
        echo "run.sh: CONFORMANCE_BIN=$bin is not an executable" >&2
        exit 2
    fi
    echo "run.sh: installing the pinned suite (npm ci in $here)" >&2
    if ! (cd "$here" && timeout 600 npm ci --no-audit --no-fund >&2); then
        echo "run.sh: npm ci failed" >&2
        exit 2
    fi
fi

version="$(timeout 60 "$bin" --version 2>/dev/null)" || {
    echo "run.sh: $bin does not run" >&2
    exit 2
}

if [[ -n "${SCENARIOS:-}" ]]; then
    read -r -a scenarios <<<"$SCENARIOS"
else
    mapfile -t scenarios < <(timeout 60 "$bin" list --server | sed -n 's/^  - //p')
fi
if [[ ${#scenarios[@]} -eq 0 ]]; then
    echo "run.sh: the suite lists no server scenarios" >&2
    exit 2
fi

mkdir -p "$outdir/raw" "$outdir/logs" || exit 2
echo "run.sh: conformance $version, ${#scenarios[@]} server scenarios against $url" >&2
for name in "${scenarios[@]}"; do
    # --kill-after: a suite process that ignores SIGTERM is killed, so the run stays bounded.
    timeout --kill-after=10 "$scenario_timeout" \
        "$bin" server --url "$url" --scenario "$name" -o "$outdir/raw" \
        >"$outdir/logs/$name.log" 2>&1 </dev/null
    echo $? >"$outdir/logs/$name.rc"
done

SUITE_VERSION="$version" node "$here/tally.mjs" "$outdir" "$url" "${scenarios[@]}" || exit 2
failed="$(node -e 'console.log(require(process.argv[1]).failed)' "$(cd "$outdir" && pwd)/tally.json")"
[[ "$failed" == 0 ]]
