#!/usr/bin/env bash
# The gateway comparison: the same trivial rmcp tool server over Streamable HTTP on loopback
# (`mcp_echo_server`), called by N concurrent rmcp clients (`mcp_load`) directly, through JRP's
# mcp-proxy (joshrotenberg's `mcp-proxy`, a tower-based Rust MCP gateway), through FastMCP's proxy
# (`fastmcp_proxy.py`) and through toolbreaker's gateway (`toolbreaker-gateway`, one upstream,
# `prefix = ""`), in rounds; then the same at one client, for the latency a proxy adds. Prints
# every run's JSON line, then the medians.
#
#   benches/mcp_gateway_compare.sh [ROUNDS]                # default 3 rounds
#   benches/mcp_gateway_compare.sh --smoke                 # a few seconds: does every target answer?
#   benches/mcp_gateway_compare.sh --summary RESULTS.tsv   # the medians of an earlier run again
#
# Environment: ERA (the MCP revision the clients speak: 2025-11-25, the default, with
# `initialize` and a session per client; or 2026-07-28, stateless, `server/discover`), CLIENTS
# (64), DURATION (10 s), WARM_UP (1 s, not counted), ONE_DURATION (5 s, the one-client runs),
# TARGETS ("direct mcp-proxy gateway"; add fastmcp for FastMCP's proxy, guarded for the gateway with
# a cap, adaptive throttling and a per-tool breaker on its upstream: which to measure, in the
# first round's order; each round starts one later), PROFILE (bench, the default: the server and
# the load built as `cargo bench` builds them, the gateway with --release; release: all three with
# --release, one build of the dependencies for the three; dev: debug builds, quick to build, for
# --smoke: their figures say nothing of speed),
# MCP_PROXY (the mcp-proxy binary: `mcp-proxy` on the PATH unless set), MCP_PROXY_VERSION (its
# version as you vouch for it, in place of cargo's record: for a binary cargo did not install),
# PYTHON (the Python with
# fastmcp installed: `benches/.venv-fastmcp/bin/python` when that exists, else python3),
# GATEWAY_BIN (a gateway binary to run instead of building one), BASELINE_BIN (another gateway
# binary, say one built at an earlier commit, measured as target `baseline` in the same rounds:
# TARGETS="direct baseline gateway"), OUT (a folder for the logs and
# results: a new temporary one unless set, kept).
#
# --smoke: one round of 1 s runs (4 clients, then 1, no warm-up) of every target; exits 1 when a
# target could not be measured, or a run failed, had an error or a timeout, or made no call.
# It checks that every target answers, never how fast.
#
# Nothing is skipped silently: a target that cannot be built or started (the gateway binary
# does not build, mcp-proxy or fastmcp is not installed, mcp-proxy is not the pinned version) is
# reported as NOT MEASURED with the reason, the others are measured, and the script exits with
# status 1. A run with errors prints them, and the summary has an errors column.
#
# JRP's mcp-proxy, the version measured (pinned: another is NOT MEASURED, so that figures stay
# comparable): cargo install --locked mcp-proxy --version 0.6.0
# FastMCP: python3 -m venv benches/.venv-fastmcp &&
#          benches/.venv-fastmcp/bin/pip install -r benches/requirements-fastmcp.txt
# Needs bash, cargo, coreutils, grep, sed and awk; python3 for the ports of mcp-proxy and FastMCP.
set -uo pipefail
cd "$(dirname "$0")/.."

summary_only=
smoke=
given="$*"
if [[ ${1:-} == --smoke ]]; then
  smoke=1
  shift
  set -- 1 "$@"
  CLIENTS=${CLIENTS:-4} DURATION=1 ONE_DURATION=1 WARM_UP=0
fi
if [[ ${1:-} == --summary ]]; then
  summary_only=${2:?--summary needs the results file of an earlier run}
  [[ -f $summary_only && -r $summary_only ]] || { echo "mcp_gateway_compare.sh: cannot read the file $summary_only" >&2; exit 2; }
  shift
  set -- 1 "${@:2}"
fi
if [[ $# -gt 1 ]]; then
  echo "mcp_gateway_compare.sh: one argument at most (ROUNDS, --smoke or --summary FILE), not: $given" >&2
  exit 2
fi
rounds=${1:-3}
clients=${CLIENTS:-64}
if [[ -n $summary_only && -z ${CLIENTS:-} ]]; then
  # The run's own client count: the largest in the file.
  clients=$(awk -F '\t' '$3 + 0 > n { n = $3 + 0 } END { print n + 0 }' "$summary_only")
fi
duration=${DURATION:-10}
warm_up=${WARM_UP:-1}
one_duration=${ONE_DURATION:-5}
targets=${TARGETS:-direct mcp-proxy gateway}
era=${ERA:-2025-11-25}
profile=${PROFILE:-bench}
# The one version of JRP's mcp-proxy these figures are of.
mcp_proxy_version=0.6.0
case $era in
  2025-11-25 | 2026-07-28) ;;
  *) echo "mcp_gateway_compare.sh: ERA must be 2025-11-25 or 2026-07-28, not '$era'" >&2; exit 2 ;;
esac
case $profile in
  bench | release) bin_dir=release ;;
  dev) bin_dir=debug ;;
  *) echo "mcp_gateway_compare.sh: PROFILE must be bench, release or dev, not '$profile'" >&2; exit 2 ;;
esac
if [[ -z ${PYTHON:-} ]]; then
  if [[ -x benches/.venv-fastmcp/bin/python ]]; then PYTHON=benches/.venv-fastmcp/bin/python; else PYTHON=python3; fi
fi
case $rounds in
  '' | *[!0-9]*) echo "mcp_gateway_compare.sh: ROUNDS must be a positive whole number, not '$rounds'" >&2; exit 2 ;;
esac
if ((10#$rounds == 0)); then
  echo "mcp_gateway_compare.sh: ROUNDS must be a positive whole number, not '$rounds'" >&2
  exit 2
fi
# Every target named is known, and there is one, before anything is built.
for target in $targets; do
  case $target in
    direct | mcp-proxy | fastmcp | gateway | guarded | baseline) ;;
    *) echo "mcp_gateway_compare: unknown target '$target' in TARGETS (direct, mcp-proxy, fastmcp, gateway, guarded, baseline)" >&2; exit 2 ;;
  esac
done
if [[ -z ${targets// /} && -z $summary_only ]]; then
  echo "mcp_gateway_compare.sh: TARGETS names no target" >&2
  exit 2
fi

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
    cpu[key] = cpu[key] " " field($4, "cpu_us_per_call")
    errors[key] += field($4, "errors") + field($4, "timeouts")
    rounds[$2] = 1
    if ($3 == 1) one[$1, $2] = field($4, "p50_us")
    targets[$1] = 1
  }
  END {
    for (r in rounds) n_rounds++
    printf "Medians of %d rounds (a row'\''s p50 and p99: the medians of its runs'\'' percentiles):\n", n_rounds
    printf "| target | clients | calls/s | p50 µs | p99 µs | CPU µs a call | errors + timeouts (all rounds) | failed runs |\n|---|---:|---:|---:|---:|---:|---:|---:|\n"
    for (k = 1; k <= keys; k++) {
      split(order[k], part, SUBSEP)
      printf "| %s | %s | %.0f | %.1f | %.1f | %.0f | %d | %d |\n", part[1], part[2], median(rate[order[k]]), median(p50[order[k]]), median(p99[order[k]]), median(cpu[order[k]]), errors[order[k]], failures[order[k]]
    }
    direct = median(rate["direct" SUBSEP clients])
    for (t in targets) if (t != "direct" && direct > 0) printf "%s: throughput at %s clients %.4f of direct, direct %.1f times it (medians)\n", t, clients, median(rate[t SUBSEP clients]) / direct, direct / median(rate[t SUBSEP clients])
    for (t in targets) if (t != "direct" && t != "gateway" && "gateway" in targets) printf "gateway / %s at %s clients: throughput %.2f, p99 %.2f (medians)\n", t, clients, median(rate["gateway" SUBSEP clients]) / median(rate[t SUBSEP clients]), median(p99["gateway" SUBSEP clients]) / median(p99[t SUBSEP clients])
    for (t in targets) {
      if (t == "direct") continue
      list = ""
      for (key in one) { split(key, part, SUBSEP); if (part[1] == t && (("direct" SUBSEP part[2]) in one)) list = list " " (one[key] - one["direct", part[2]]) }
      if (list != "") printf "%s: p50 added at 1 client, median of the rounds'\'' differences to direct: %.1f µs\n", t, median(list)
    }
  }' "$1"
}


if [[ -n $summary_only ]]; then
  if ! grep -qE $'^[^\t]+\t[0-9]+\t[0-9]+\t\\{' "$summary_only"; then
    echo "mcp_gateway_compare.sh: $summary_only has no result line (TARGET, ROUND, CLIENTS and a JSON line, tab-separated)" >&2
    exit 2
  fi
  summary "$summary_only" "$clients" || exit 1
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
bin="$target_dir/$bin_dir"

# Built once, before any run, with the bench profile (thin LTO, one codegen unit), as
# `cargo bench` builds this package: the same server and load generator for every target. (Its
# output folder is `release`, as the release profile's; `debug` for PROFILE=dev.)
echo "mcp_gateway_compare: building mcp_echo_server and mcp_load ($profile profile)" >&2
if ! cargo build --profile "$profile" -p toolbreaker-benches --bin mcp_echo_server --bin mcp_load > "$out/build-benches.log" 2>&1; then
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

declare -A url tool pid_of
measured=()
pid_of[direct]=$server_pid

# Starts gateway binary BIN as target NAME, with the server as its one upstream (and the TOML
# EXTRA after its table); 1 when it does not start (reported NOT MEASURED).
start_gateway() { # NAME BIN [EXTRA]
  local name=$1 gateway=$2 pid bound status
  cat > "$out/$name.toml" << EOF
[upstreams.echo]
url = "$server_url"
prefix = ""
${3:-}
EOF
  # What `cargo run --release -p toolbreaker-gateway -- --config FILE --listen ADDR` runs.
  # On a port the system picks: its log line `listening bound=ADDR` says which (60 s at most).
  "$gateway" --config "$out/$name.toml" --listen 127.0.0.1:0 > "$out/$name.out" 2> "$out/$name.err" &
  pid=$!
  pids+=("$pid")
  bound=
  for _ in $(seq 600); do
    bound=$(sed -n 's/.*listening bound=\([0-9.:]*\).*/\1/p' "$out/$name.err" | head -1)
    [[ -n $bound ]] && break
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.1
  done
  if [[ -z $bound ]]; then
    status=running
    kill -0 "$pid" 2> /dev/null || { wait "$pid"; status="exited with status $?"; }
    not_measured "$name" "\`$gateway --config $out/$name.toml --listen 127.0.0.1:0\` did not start listening ($status): $(tail -3 "$out/$name.err" | tr '\n' ' ')"
    return 1
  fi
  echo "mcp_gateway_compare: $name ($gateway) at http://$bound/mcp" >&2
  url[$name]="http://$bound/mcp"
  tool[$name]=echo
  pid_of[$name]=$pid
  measured+=("$name")
}
# The gateway binary to measure, in \$gateway: GATEWAY_BIN, or the one built here (once, for
# `gateway` and `guarded`); 1 when there is none (target NAME reported NOT MEASURED).
gateway_binary() { # NAME
  [[ -n ${built_gateway:-} ]] && { gateway=$built_gateway; return 0; }
  gateway=${GATEWAY_BIN:-$bin/toolbreaker-gateway}
  if [[ -z ${GATEWAY_BIN:-} ]]; then
    gateway_profile=release
    [[ $profile == dev ]] && gateway_profile=dev
    echo "mcp_gateway_compare: building toolbreaker-gateway ($gateway_profile profile)" >&2
    if ! cargo build --profile "$gateway_profile" -p toolbreaker-gateway > "$out/build-gateway.log" 2>&1; then
      not_measured "$1" "\`cargo build --profile $gateway_profile -p toolbreaker-gateway\` failed (log: $out/build-gateway.log): $(grep -m1 -E '^error' "$out/build-gateway.log")"
      return 1
    fi
  fi
  if [[ ! -x $gateway ]]; then
    not_measured "$1" "no gateway binary at $gateway"
    return 1
  fi
  built_gateway=$gateway
}
for target in $targets; do
  case $target in
    direct)
      url[direct]=$server_url
      tool[direct]=echo
      measured+=(direct)
      ;;
    mcp-proxy)
      proxy=${MCP_PROXY:-mcp-proxy}
      if ! command -v "$proxy" > /dev/null; then
        not_measured mcp-proxy "no mcp-proxy at '$proxy' (install: cargo install --locked mcp-proxy --version $mcp_proxy_version)"
        continue
      fi
      # mcp-proxy has no --version: the version is cargo's record of what it installed, or
      # MCP_PROXY_VERSION for a binary from elsewhere.
      version=${MCP_PROXY_VERSION:-}
      if [[ -z $version && $(command -v "$proxy") == "${CARGO_HOME:-$HOME/.cargo}/bin/mcp-proxy" ]]; then
        version=$(cargo install --list 2> /dev/null | sed -n 's/^mcp-proxy v\([^:]*\):$/\1/p')
      fi
      if [[ $version != "$mcp_proxy_version" ]]; then
        not_measured mcp-proxy "$proxy is version '${version:-unknown}'; these figures are of $mcp_proxy_version (cargo install --locked mcp-proxy --version $mcp_proxy_version; MCP_PROXY_VERSION says the version of a binary from elsewhere)"
        continue
      fi
      version="mcp-proxy $version"
      port=$(free_port)
      # One HTTP backend named `echo`: its tool is `echo/echo`; MCP is served at `/`.
      cat > "$out/mcp-proxy.toml" << EOF
[proxy]
name = "bench"

[proxy.listen]
host = "127.0.0.1"
port = $port

[[backends]]
name = "echo"
transport = "http"
url = "$server_url"
EOF
      "$proxy" --config "$out/mcp-proxy.toml" > "$out/mcp-proxy.out" 2> "$out/mcp-proxy.err" &
      pid=$!
      pids+=("$pid")
      if ! wait_port "$port" "$pid"; then
        status=running
        kill -0 "$pid" 2> /dev/null || { wait "$pid"; status="exited with status $?"; }
        not_measured mcp-proxy "\`$proxy --config $out/mcp-proxy.toml\` did not start listening on port $port ($status): $(tail -3 "$out/mcp-proxy.err" | tr '\n' ' ')"
        continue
      fi
      echo "mcp_gateway_compare: $version at http://127.0.0.1:$port/" >&2
      url[mcp-proxy]="http://127.0.0.1:$port/"
      pid_of[mcp-proxy]=$pid
      tool[mcp-proxy]=echo/echo
      measured+=(mcp-proxy)
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
      pid_of[fastmcp]=$pid
      tool[fastmcp]=echo
      measured+=(fastmcp)
      ;;
    gateway)
      gateway_binary gateway || continue
      start_gateway gateway "$gateway" || continue
      ;;
    guarded)
      # The same gateway with the admission of a serious deployment on its upstream, none of
      # it refusing a call at this load: a cap, adaptive throttling, and a breaker of the tool's
      # own (breaker keys in its table).
      gateway_binary guarded || continue
      start_gateway guarded "$gateway" "max_in_flight = 4096
adaptive_throttling = { k = 2.0, window_ms = 10000 }

[upstreams.echo.tools.echo]
failure_threshold = 5" || continue
      ;;
    baseline)
      if [[ -z ${BASELINE_BIN:-} || ! -x ${BASELINE_BIN:-} ]]; then
        not_measured baseline "BASELINE_BIN names no gateway binary ('${BASELINE_BIN:-}'): build the commit to compare against and name its target/release/toolbreaker-gateway"
        continue
      fi
      start_gateway baseline "$BASELINE_BIN" || continue
      ;;
    *)
      echo "mcp_gateway_compare: unknown target '$target' in TARGETS (direct, mcp-proxy, fastmcp, gateway, guarded, baseline)" >&2
      exit 2
      ;;
  esac
done

# One run: TARGET ROUND CLIENTS SECONDS; its JSON line goes to the results.
# The CPU time a process has used, in clock ticks (user and system; Linux's /proc), or nothing.
cpu_ticks() { # PID
  [[ -r /proc/$1/stat ]] && awk '{ print $14 + $15 }' "/proc/$1/stat"
}
ticks_per_s=$(getconf CLK_TCK 2> /dev/null || echo 100)

# One run: TARGET ROUND CLIENTS SECONDS; its JSON line goes to the results, with the target's
# process's CPU time per counted call (`cpu_us_per_call`: its CPU over the whole of mcp_load's
# run, the clients' connecting and closing included, scaled by the run's share of the warm-up
# and the run, over the calls counted; in clock ticks, 10 ms here. Connecting weighs most in
# short runs: compare runs of the same length).
load() {
  local line status before after
  before=$(cpu_ticks "${pid_of[$1]}")
  line=$("$bin/mcp_load" --url "${url[$1]}" --tool "${tool[$1]}" --protocol "$era" --clients "$3" --duration "$4" --warm-up "$warm_up" 2>> "$out/load.err")
  status=$?
  after=$(cpu_ticks "${pid_of[$1]}")
  if [[ -z $line ]]; then
    line="{\"failed\":true,\"status\":$status,\"error\":\"$(tail -1 "$out/load.err" | tr -d '"\\')\"}"
    failed=1
  elif [[ -n $before && -n $after ]]; then
    line="${line%\}},\"cpu_us_per_call\":$(awk -v b="$before" -v a="$after" -v hz="$ticks_per_s" -v d="$4" -v w="$warm_up" -v line="$line" 'BEGIN {
      calls = 0; if (match(line, /"calls":[0-9]+/)) calls = substr(line, RSTART + 8, RLENGTH - 8)
      if (calls > 0) printf "%.1f", (a - b) * 1e6 / hz * d / (d + w) / calls; else print "null" }')}"
  fi
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$line" >> "$results"
  printf '%-9s round %s, %3s clients: %s\n' "$1" "$2" "$3" "$line"
}

n=${#measured[@]}
if [[ $n -eq 0 ]]; then
  echo "mcp_gateway_compare: no target could be measured:" >&2
  cat "$out/not_measured.txt" >&2
  exit 1
fi
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
echo "MCP $era; $clients clients for ${duration} s, 1 client for ${one_duration} s; warm-up ${warm_up} s; results in $results"
summary "$results" "$clients"

if [[ -s $out/not_measured.txt ]]; then
  echo
  cat "$out/not_measured.txt"
fi
if [[ -n $smoke ]]; then
  # Every run answered, with calls and without an error or a timeout.
  bad=$(awk -F '\t' '$4 ~ /"failed"/ || $4 !~ /"errors":0[,}]/ || $4 !~ /"timeouts":0[,}]/ || $4 ~ /"calls":0[,}]/' "$results")
  if [[ -n $bad ]]; then
    echo "mcp_gateway_compare: smoke: a run failed, erred, timed out or made no call:" >&2
    echo "$bad" >&2
    failed=1
  elif [[ $failed -ne 0 || ${#measured[@]} -eq 0 ]]; then
    echo "mcp_gateway_compare: smoke: not every target was measured (NOT MEASURED above)" >&2
    failed=1
  else
    echo "mcp_gateway_compare: smoke: every target (${measured[*]}) answered in MCP $era without an error"
  fi
fi
exit "$failed"
