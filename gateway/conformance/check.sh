#!/usr/bin/env bash
# The MCP conformance check: builds the conformance upstream (the `conformance_upstream`
# example of toolbreaker-gateway, serving both MCP eras), starts it on a free loopback port,
# runs the pinned suite's server scenarios of each requirement set against it directly
# (run.sh) and prints the tallies; then, when given a gateway, runs them again through the
# gateway and fails if any scenario that passed directly fails through it.
#
#   gateway/conformance/check.sh [--out DIR] [--requirements VERSION]
#                                [--gateway | --gateway-cmd CMD | --gateway-url URL]
#
#   --out DIR          where the results go (default: a new temporary directory): for each
#                      requirement set VERSION, DIR/VERSION/direct/ and DIR/VERSION/gateway/
#                      (run.sh's tally.json, tally.tsv, raw/, logs/) and
#                      DIR/VERSION/comparison.json; each process's stdout/stderr in DIR.
#   --requirements V   run requirement set V only (e.g. 2026-07-28, 2025-11-25); repeatable.
#                      Default (or `both`): every set the pinned suite bundles, newest first.
#   --gateway          the gateway of this package (its binary built like the upstream, or
#                      GATEWAY_BIN), with one upstream, the conformance upstream, `prefix = ""`.
#   --gateway-cmd CMD  a shell command that starts the gateway in front of the upstream. It
#                      runs with UPSTREAM_URL set to the upstream's MCP URL, must serve it with
#                      `prefix = ""`, and must print the gateway's MCP URL
#                      (http://127.0.0.1:PORT/mcp) as its first line on stdout. It is started
#                      in its own process group, which is ended (children included) on exit.
#   --gateway-url URL  a gateway already running in front of an upstream (no upstream is
#                      started for the second run; the direct run still uses this script's).
#   Environment: GATEWAY_CMD, GATEWAY_URL and REQUIREMENTS (space-separated) stand for the
#   options; UPSTREAM_BIN skips the build and runs that executable; UPSTREAM_ARGS are added to
#   its command line (e.g. `--era 2025-11-25`); SCENARIOS, SCORED_ONLY, SCENARIO_TIMEOUT, NODE,
#   CONFORMANCE_BIN go to run.sh; START_TIMEOUT (default 60 s) bounds the wait for each
#   server's URL, BUILD_TIMEOUT (default 1800 s) the build, RUN_TIMEOUT (default 1800 s) each
#   run of the suite.
#
# A gateway command, for example (the gateway's own flags are its business):
#   GATEWAY_CMD='cfg=$(mktemp) && printf "[upstreams.conformance]\nurl = \"%s\"\nprefix = \"\"\n" \
#     "$UPSTREAM_URL" >"$cfg" && exec target/debug/toolbreaker-gateway --config "$cfg" \
#     --listen 127.0.0.1:0' gateway/conformance/check.sh
#
# Exit status: 0 when, in every set run, every scored scenario passed directly and (with a
# gateway) every scenario that passed directly passed through it; 1 when not; 2 when something
# could not be built, started or run.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out=""
gateway_cmd="${GATEWAY_CMD:-}"
gateway_url="${GATEWAY_URL:-}"
start_timeout="${START_TIMEOUT:-60}"
use_gateway=0
read -r -a sets <<<"${REQUIREMENTS:-}"
cli_sets=()

while [[ $# -gt 0 ]]; do
    case "$1" in
        --out) out="$2"; shift 2 ;;
        --gateway-cmd) gateway_cmd="$2"; shift 2 ;;
        --gateway) use_gateway=1; shift ;;
        --gateway-url) gateway_url="$2"; shift 2 ;;
        --requirements)
            case "${2:-}" in
                both|all) cli_sets=() ;;
                *) cli_sets+=("${2:-}") ;;
            esac
            shift 2 || shift ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
for tool in node npm; do
    if ! command -v "$tool" >/dev/null; then
        echo "check.sh: $tool is not installed (npm ci installs the suite and its Node.js 22)" >&2
        exit 2
    fi
done
[[ ${#cli_sets[@]} -gt 0 ]] && sets=("${cli_sets[@]}")
if [[ ${#sets[@]} -eq 0 ]]; then
    # Every set the suite bundles, newest first (run.sh lists them oldest first).
    mapfile -t sets < <("$here/run.sh" --sets | sort -r)
    if [[ ${#sets[@]} -eq 0 ]]; then
        echo "check.sh: the suite names no requirement set" >&2
        exit 2
    fi
fi
if [[ -n "$gateway_cmd" && -n "$gateway_url" ]]; then
    echo "check.sh: give --gateway-cmd or --gateway-url, not both" >&2
    exit 2
fi
if [[ -z "$out" ]]; then
    out="$(mktemp -d "${TMPDIR:-/tmp}/mcp-conformance.XXXXXX")" || exit 2
fi
mkdir -p "$out" || exit 2
out="$(cd "$out" && pwd)"

# Process groups this script started; each is ended, children included, whatever way it exits.
groups=()
cleanup() {
    local group
    for group in "${groups[@]}"; do
        kill -TERM -- "-$group" 2>/dev/null || kill -TERM "$group" 2>/dev/null
    done
    for group in "${groups[@]}"; do
        # Up to 5 s for a graceful end, then SIGKILL.
        for _ in $(seq 50); do
            kill -0 "$group" 2>/dev/null || kill -0 -- "-$group" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL -- "-$group" 2>/dev/null || kill -KILL "$group" 2>/dev/null
    done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Starts `bash -c CMD` in its own process group (stdout to $out/NAME.out, stderr to
# $out/NAME.err) and waits for its first stdout line, the MCP URL, which it sets as $started_url.
# Not to be called in a subshell: the group must be recorded here for cleanup.
started_url=""
start() {
    local name="$1" command="$2" pid url=""
    if command -v setsid >/dev/null; then
        setsid bash -c "$command" >"$out/$name.out" 2>"$out/$name.err" </dev/null &
    else
        bash -c "$command" >"$out/$name.out" 2>"$out/$name.err" </dev/null &
    fi
    pid=$!
    groups+=("$pid")
    for _ in $(seq $((start_timeout * 10))); do
        # The first line holds the URL (alone, or as in the gateway's "listening on URL").
        url="$(head -n 1 "$out/$name.out" 2>/dev/null | grep -oE 'https?://[^ ]+' | head -n 1)"
        [[ -n "$url" ]] && break
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "check.sh: the $name ended before printing its URL; its stderr:" >&2
            tail -n 20 "$out/$name.err" >&2
            return 1
        fi
        sleep 0.1
    done
    if [[ ! "$url" =~ ^https?:// ]]; then
        echo "check.sh: the $name printed no URL within ${start_timeout} s (got '$url')" >&2
        return 1
    fi
    started_url="$url"
}

# Requirement set SET of the suite against URL into $out/SET/NAME; its status (0 all scored
# passed, 1 some failed, 2 not run).
suite() {
    local set="$1" name="$2" url="$3"
    echo "== requirement set $set against the $name: $url" >&2
    timeout --kill-after=10 "${RUN_TIMEOUT:-1800}" \
        "$here/run.sh" --requirements "$set" "$url" "$out/$set/$name"
}

# "passed/total" of the scored scenarios in a run's tally, and of the unscored ones.
score() {
    node -e '
        const t = require(process.argv[1]);
        const others = Object.values(t.notScored ?? {});
        const ok = others.filter((r) => r.result === "pass").length;
        console.log(`${t.passed}/${t.total} (not scored: ${ok}/${others.length})`);
    ' "$1" 2>/dev/null || echo "no tally"
}

# Builds the package's target NAME of KIND (`--example`, `--bin`) and prints its executable,
# taken from cargo's own report, so any target dir works.
build() {
    local kind="$1" name="$2"
    (cd "$root" && timeout "${BUILD_TIMEOUT:-1800}" "${CARGO:-cargo}" build \
        -p toolbreaker-gateway "$kind" "$name" --message-format=json-render-diagnostics \
        | node -e '
            const name = process.argv[1];
            let exe = "";
            require("readline").createInterface({ input: process.stdin })
              .on("line", (line) => {
                try {
                  const m = JSON.parse(line);
                  if (m.reason === "compiler-artifact" && m.target.name === name && m.executable) exe = m.executable;
                } catch {}
              })
              .on("close", () => console.log(exe));
        ' "$name")
}

upstream_bin="${UPSTREAM_BIN:-}"
if [[ -z "$upstream_bin" ]]; then
    echo "== building the conformance upstream" >&2
    upstream_bin="$(build --example conformance_upstream)"
    if [[ -z "$upstream_bin" || ! -x "$upstream_bin" ]]; then
        echo "check.sh: building the conformance upstream failed" >&2
        exit 2
    fi
fi
if [[ $use_gateway -eq 1 ]]; then
    if [[ -n "$gateway_cmd" || -n "$gateway_url" ]]; then
        echo "check.sh: give one of --gateway, --gateway-cmd, --gateway-url" >&2
        exit 2
    fi
    gateway_bin="${GATEWAY_BIN:-}"
    if [[ -z "$gateway_bin" ]]; then
        echo "== building the gateway" >&2
        gateway_bin="$(build --bin toolbreaker-gateway)"
    fi
    if [[ -z "$gateway_bin" || ! -x "$gateway_bin" ]]; then
        echo "check.sh: building the gateway failed" >&2
        exit 2
    fi
    export GATEWAY_BIN="$gateway_bin" GATEWAY_CONFIG="$out/gateway.toml"
    gateway_cmd='printf "[upstreams.conformance]\nurl = \"%s\"\nprefix = \"\"\n" "$UPSTREAM_URL" > "$GATEWAY_CONFIG" && exec "$GATEWAY_BIN" --config "$GATEWAY_CONFIG" --listen 127.0.0.1:0'
fi

export CONFORMANCE_UPSTREAM="$upstream_bin" UPSTREAM_ARGS="${UPSTREAM_ARGS:-}"
start upstream 'exec "$CONFORMANCE_UPSTREAM" --listen 127.0.0.1:0 $UPSTREAM_ARGS' || exit 2
upstream_url="$started_url"
export UPSTREAM_URL="$upstream_url"
if [[ -n "$gateway_cmd" ]]; then
    start gateway "$gateway_cmd" || exit 2
    gateway_url="$started_url"
fi

status=0
summary=()
for set in "${sets[@]}"; do
    suite "$set" direct "$upstream_url"
    direct_status=$?
    [[ $direct_status -eq 2 ]] && exit 2
    [[ $direct_status -ne 0 ]] && status=1
    line="$set: directly $(score "$out/$set/direct/tally.json")"
    if [[ -n "$gateway_url" ]]; then
        suite "$set" gateway "$gateway_url"
        [[ $? -eq 2 ]] && exit 2
        node "$here/compare.mjs" "$out/$set/direct/tally.json" "$out/$set/gateway/tally.json" \
            "$out/$set/comparison.json" || status=1
        line+="; through the gateway $(score "$out/$set/gateway/tally.json")"
    fi
    summary+=("$line")
done

echo "== scored scenarios passed, per requirement set:"
printf '   %s\n' "${summary[@]}"
if [[ -z "$gateway_url" ]]; then
    echo "== no gateway given (--gateway, --gateway-cmd or --gateway-url): direct runs only" >&2
fi
echo "== results in $out" >&2
exit "$status"
