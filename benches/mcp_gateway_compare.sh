#!/usr/bin/env bash
# The gateway comparison: the same trivial rmcp tool server over Streamable HTTP on loopback
# (`mcp_echo_server`), called by N concurrent rmcp clients (`mcp_load`) directly, through
# FastMCP's proxy (`fastmcp_proxy.py`) and through toolbreaker's gateway (`toolbreaker-gateway`,
# one upstream, `prefix = ""`), in rounds; then the same at one client, for the latency a proxy
# adds. Prints every run's JSON line, then the medians.
#
#   benches/mcp_gateway_compare.sh [ROUNDS]                # default 3 rounds
#   benches/mcp_gateway_compare.sh --summary RESULTS.tsv   # the medians of an earlier run again
#
# Environment: CLIENTS (64), DURATION (10 s), WARM_UP (1 s, not counted), ONE_DURATION (5 s, the
# one-client runs), TARGETS ("direct fastmcp gateway": which to measure, in the first round's
# order; each round starts one later), PYTHON (the Python with fastmcp installed:
# `benches/.venv-fastmcp/bin/python` when that exists, else python3), GATEWAY_BIN (a gateway
# binary to run instead of building one), OUT (a folder for the logs and results: a new
# temporary one unless set, kept).
#
# Nothing is skipped silently: a target that cannot be built or started (the gateway binary
# does not build, fastmcp is not installed) is reported as NOT MEASURED with the reason, the
# others are measured, and the script exits with status 1. A run with errors prints them, and
# the summary has an errors column.
#
# FastMCP: python3 -m venv benches/.venv-fastmcp &&
#          benches/.venv-fastmcp/bin/pip install -r benches/requirements-fastmcp.txt
# Needs bash, cargo, python3 (free ports; FastMCP), coreutils, grep, sed and awk.
set -uo pipefail
cd "$(dirname "$0")/.."

summary_only=
if [[ ${1:-} == --summary ]]; then
  summary_only=${2:?--summary needs the results file of an earlier run}
  [[ -r $summary_only ]] || { echo "mcp_gateway_compare.sh: cannot read $summary_only" >&2; exit 2; }
  set -- 1
fi
rounds=${1:-3}
clients=${CLIENTS:-64}
duration=${DURATION:-10}
warm_up=${WARM_UP:-1}
one_duration=${ONE_DURATION:-5}
targets=${TARGETS:-direct fastmcp gateway}
if [[ -z ${PYTHON:-} ]]; then
  if [[ -x benches/.venv-fastmcp/bin/python ]]; then PYTHON=benches/.venv-fastmcp/bin/python; else PYTHON=python3; fi
fi
case $rounds in
  '' | *[!0-9]* | 0) echo "mcp_gateway_compare.sh: ROUNDS must be a positive whole number, not '$rounds'" >&2; exit 2 ;;
esac

# The medians over the rounds, per target and client count, of a results file (RESULTS CLIENTS).
summary() {
awk -F '\t' -v clients="$2" '
  BEGIN { CONVFMT = "%.10g"; OFMT = "%.10g" }
  # The field as written (a string: no rounding), or "nan".
  function field(json, name) {
    if (match(json, "\"" name "\":[-0-9.eE+]+")) return substr(json, RSTART + length(name) + 3, RLENGTH - length(name) - 3)
    return "nan"
  }
  function median(list,   a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    if (n == 0) return "nan"
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  {
    key = $1 SUBSEP $3
    if (!(key in seen)) { seen[key] = 1; order[++keys] = key }
    if ($4 ~ /"failed"/) { failures[key]++; next }
    rate[key] = rate[key] " " field($4, "calls_per_s")
    p50[key] = p50[key] " " field($4, "p50_us")
    p99[key] = p99[key] " " field($4, "p99_us")
    errors[key] += field($4, "errors") + field($4, "timeouts")
    rounds[$2] = 1
    if ($3 == 1) one[$1, $2] = field($4, "p50_us")
    targets[$1] = 1
  }
  END {
    for (r in rounds) n_rounds++
    printf "Medians of %d rounds (a row'\''s p50 and p99: the medians of its runs'\'' percentiles):\n", n_rounds
    printf "| target | clients | calls/s | p50 µs | p99 µs | errors + timeouts (all rounds) | failed runs |\n|---|---:|---:|---:|---:|---:|---:|\n"
    for (k = 1; k <= keys; k++) {
      split(order[k], part, SUBSEP)
      printf "| %s | %s | %.0f | %.1f | %.1f | %d | %d |\n", part[1], part[2], median(rate[order[k]]), median(p50[order[k]]), median(p99[order[k]]), errors[order[k]], failures[order[k]]
    }
    direct = median(rate["direct" SUBSEP clients])
    for (t in targets) if (t != "direct" && direct > 0) printf "%s: throughput at %s clients %.4f of direct, direct %.1f times it (medians)\n", t, clients, median(rate[t SUBSEP clients]) / direct, direct / median(rate[t SUBSEP clients])
    if ("fastmcp" in targets && "gateway" in targets) printf "gateway / fastmcp throughput at %s clients: %.1f (medians)\n", clients, median(rate["gateway" SUBSEP clients]) / median(rate["fastmcp" SUBSEP clients])
    for (t in targets) {
      if (t == "direct") continue
      list = ""
      for (key in one) { split(key, part, SUBSEP); if (part[1] == t && (("direct" SUBSEP part[2]) in one)) list = list " " (one[key] - one["direct", part[2]]) }
      if (list != "") printf "%s: p50 added at 1 client, median of the rounds'\'' differences to direct: %.1f µs\n", t, median(list)
    }
  }' "$1"
}


if [[ -n $summary_only ]]; then
  summary "$summary_only" "$clients"
  exit 0
fi


out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
results="$out/results.tsv"
: > "$results"
echo "mcp_gateway_compare: logs and results in $out" >&2

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null; done
  for pid in "${pids[@]}"; do wait "$pid" 2> /dev/null; done
}
trap cleanup EXIT

failed=0
not_measured() { # TARGET REASON
  echo "mcp_gateway_compare: $1: NOT MEASURED: $2" >&2
  echo "$1 NOT MEASURED: $2" >> "$out/not_measured.txt"
  failed=1
}

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2> /dev/null ||
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Wait until 127.0.0.1:PORT accepts connections and PID still runs; 60 s at most.
wait_port() { # PORT PID
  local i
  for i in $(seq 600); do
    kill -0 "$2" 2> /dev/null || return 1
    if (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null; then return 0; fi
    sleep 0.1
  done
  return 1
}

target_dir=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
bin="$target_dir/release"

# Built once, before any run, with the bench profile (thin LTO, one codegen unit), as
# `cargo bench` builds this package: the same server and load generator for every target. (Its
# output folder is `release`, as the release profile's.)
echo "mcp_gateway_compare: building mcp_echo_server and mcp_load (bench profile)" >&2
if ! cargo build --profile bench -p toolbreaker-benches --bin mcp_echo_server --bin mcp_load > "$out/build-benches.log" 2>&1; then
  cat "$out/build-benches.log" >&2
  echo "mcp_gateway_compare: the server and load generator did not build: nothing measured" >&2
  exit 1
fi

# The server.
"$bin/mcp_echo_server" --listen 127.0.0.1:0 > "$out/server.out" 2> "$out/server.err" &
server_pid=$!
pids+=("$server_pid")
server_url=
for _ in $(seq 600); do
  server_url=$(sed -n 's/^ready //p' "$out/server.out" 2> /dev/null)
  [[ -n $server_url ]] && break
  kill -0 "$server_pid" 2> /dev/null || break
  sleep 0.1
done
if [[ -z $server_url ]]; then
  cat "$out/server.err" >&2
  echo "mcp_gateway_compare: the echo server did not start: nothing measured" >&2
  exit 1
fi
echo "mcp_gateway_compare: server at $server_url" >&2

declare -A url
measured=()
for target in $targets; do
  case $target in
    direct)
      url[direct]=$server_url
      measured+=(direct)
      ;;
    fastmcp)
      if ! "$PYTHON" -c 'import fastmcp' 2> "$out/fastmcp-import.err"; then
        not_measured fastmcp "$PYTHON cannot import fastmcp (install: python3 -m venv benches/.venv-fastmcp && benches/.venv-fastmcp/bin/pip install -r benches/requirements-fastmcp.txt): $(tail -1 "$out/fastmcp-import.err")"
        continue
      fi
      port=$(free_port)
      "$PYTHON" benches/fastmcp_proxy.py --upstream "$server_url" --port "$port" > "$out/fastmcp.out" 2> "$out/fastmcp.err" &
      pid=$!
      pids+=("$pid")
      if ! wait_port "$port" "$pid"; then
        not_measured fastmcp "the proxy did not start listening on port $port: $(tail -3 "$out/fastmcp.err" | tr '\n' ' ')"
        continue
      fi
      echo "mcp_gateway_compare: fastmcp $("$PYTHON" -c 'import fastmcp; print(fastmcp.__version__)') proxy at http://127.0.0.1:$port/mcp" >&2
      url[fastmcp]="http://127.0.0.1:$port/mcp"
      measured+=(fastmcp)
      ;;
    gateway)
      gateway=${GATEWAY_BIN:-$bin/toolbreaker-gateway}
      if [[ -z ${GATEWAY_BIN:-} ]]; then
        echo "mcp_gateway_compare: building toolbreaker-gateway (release)" >&2
        if ! cargo build --release -p toolbreaker-gateway > "$out/build-gateway.log" 2>&1; then
          not_measured gateway "\`cargo build --release -p toolbreaker-gateway\` failed (log: $out/build-gateway.log): $(grep -m1 -E '^error' "$out/build-gateway.log")"
          continue
        fi
      fi
      if [[ ! -x $gateway ]]; then
        not_measured gateway "no gateway binary at $gateway"
        continue
      fi
      port=$(free_port)
      cat > "$out/gateway.toml" << EOF
[upstreams.echo]
url = "$server_url"
prefix = ""
EOF
      # What `cargo run --release -p toolbreaker-gateway -- --config FILE --listen ADDR` runs.
      "$gateway" --config "$out/gateway.toml" --listen "127.0.0.1:$port" > "$out/gateway.out" 2> "$out/gateway.err" &
      pid=$!
      pids+=("$pid")
      if ! wait_port "$port" "$pid"; then
        status=running
        kill -0 "$pid" 2> /dev/null || { wait "$pid"; status="exited with status $?"; }
        not_measured gateway "\`$gateway --config $out/gateway.toml --listen 127.0.0.1:$port\` did not start listening ($status): $(tail -3 "$out/gateway.err" | tr '\n' ' ')"
        continue
      fi
      echo "mcp_gateway_compare: gateway at http://127.0.0.1:$port/mcp" >&2
      url[gateway]="http://127.0.0.1:$port/mcp"
      measured+=(gateway)
      ;;
    *)
      echo "mcp_gateway_compare: unknown target '$target' in TARGETS (direct, fastmcp, gateway)" >&2
      exit 2
      ;;
  esac
done

# One run: TARGET ROUND CLIENTS SECONDS; its JSON line goes to the results.
load() {
  local line status
  line=$("$bin/mcp_load" --url "${url[$1]}" --clients "$3" --duration "$4" --warm-up "$warm_up" 2>> "$out/load.err")
  status=$?
  if [[ -z $line ]]; then
    line="{\"failed\":true,\"status\":$status,\"error\":\"$(tail -1 "$out/load.err" | tr -d '"\\')\"}"
    failed=1
  fi
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$line" >> "$results"
  printf '%-8s round %s, %3s clients: %s\n' "$1" "$2" "$3" "$line"
}

n=${#measured[@]}
for round in $(seq "$rounds"); do
  for i in $(seq 0 $((n - 1))); do
    target=${measured[$(((i + round - 1) % n))]}
    load "$target" "$round" "$clients" "$duration"
  done
  for i in $(seq 0 $((n - 1))); do
    target=${measured[$(((i + round - 1) % n))]}
    load "$target" "$round" 1 "$one_duration"
  done
done

echo
echo "$clients clients for ${duration} s, 1 client for ${one_duration} s; warm-up ${warm_up} s; results in $results"
summary "$results" "$clients"

if [[ -s $out/not_measured.txt ]]; then
  echo
  cat "$out/not_measured.txt"
fi
exit "$failed"
