#!/usr/bin/env bash
# Run the benchmarks a criterion filter selects ROUNDS times in a row, and compare them round by
# round. The machines these run on change speed while they run, so two figures taken minutes apart
# may come from different machines; figures taken in the same round, seconds apart, are comparable.
#
#   benches/alternate.sh [FILTER] [ROUNDS]      # defaults: closed_healthy/ 5
#
# FILTER is criterion's (a regular expression over `group/benchmark`; `closed_healthy` alone would
# also select `closed_healthy_2_threads`). Each round is a whole
# `cargo bench -p toolbreaker-benches --bench breakers -- FILTER` with a short warm-up and
# measurement (WARM_UP and MEASURE, seconds: 0.3 and 1 unless set). It prints, per benchmark, the
# median of the round medians with their minimum and maximum; then, for every `toolbreaker*` row of
# a group that has a `sketch` row (REFERENCE to pair with another), its difference to that row in
# each round and the median of those paired differences. Nanoseconds throughout.
#
# Each round writes to a scratch criterion folder (CRITERION_HOME), removed at the end: wherever
# the target folder is, the runs leave the saved criterion baselines as they were. Needs bash,
# cargo and the coreutils, find and awk.
set -euo pipefail
cd "$(dirname "$0")/.."

filter=${1:-closed_healthy/}
rounds=${2:-5}
warm_up=${WARM_UP:-0.3}
measure=${MEASURE:-1}
reference=${REFERENCE:-sketch}
case $rounds in
  '' | *[!0-9]* | 0) echo "alternate.sh: ROUNDS must be a positive whole number, not '$rounds'" >&2; exit 2 ;;
esac

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Built once, before the first round.
cargo bench -p toolbreaker-benches --bench breakers --no-run --quiet

for round in $(seq "$rounds"); do
  home="$scratch/round-$round"
  mkdir -p "$home"
  printf 'round %d of %d: %s\n' "$round" "$rounds" "$filter" >&2
  if ! CRITERION_HOME="$home" cargo bench -p toolbreaker-benches --bench breakers --quiet -- \
    --warm-up-time "$warm_up" --measurement-time "$measure" --noplot "$filter" \
    > "$scratch/round-$round.log" 2>&1; then
    cat "$scratch/round-$round.log" >&2
    exit 1
  fi
  # `<home>/<group>/<benchmark>/new/estimates.json`, one line of JSON each, in the order written.
  found=0
  while read -r _ file; do
    id=${file%/new/estimates.json}
    # The median object holds one nested object (its confidence interval): take it whole, then
    # its point estimate.
    median=$(sed -n 's/.*"median":{\([^{}]*{[^{}]*}[^{}]*\)}.*/\1/p' "$home/$file" |
      sed -n 's/.*"point_estimate":\([^,}]*\).*/\1/p')
    if [ -z "$median" ]; then
      echo "alternate.sh: no median in $file" >&2
      exit 1
    fi
    printf '%s %s %s\n' "$round" "$id" "$median" >> "$scratch/medians"
    found=$((found + 1))
  done < <(find "$home" -path '*/new/estimates.json' -printf '%T@ %P\n' | sort -n)
  if [ "$found" -eq 0 ]; then
    echo "alternate.sh: the filter '$filter' selected no benchmark" >&2
    exit 1
  fi
done

awk -v rounds="$rounds" -v reference="$reference" '
  # Median of the n numbers in a[1..n], sorting them in place (n is a handful of rounds).
  function median(a, n,    i, j, t) {
    for (i = 2; i <= n; i++) {
      t = a[i]
      for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]
      a[j + 1] = t
    }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  {
    round = $1; id = $2; value[round, id] = $3 + 0
    if (!(id in seen)) { seen[id] = 1; order[++ids] = id; if (length(id) > width) width = length(id) }
  }
  END {
    if (width < 24) width = 24
    col = "%-" width "s"
    printf "\n" col " %9s %9s %9s   (ns, %d rounds)\n", "benchmark", "median", "min", "max", rounds
    for (k = 1; k <= ids; k++) {
      id = order[k]; n = 0
      for (r = 1; r <= rounds; r++) if ((r, id) in value) v[++n] = value[r, id]
      lo = v[1]; hi = v[1]
      for (i = 2; i <= n; i++) { if (v[i] < lo) lo = v[i]; if (v[i] > hi) hi = v[i] }
      printf col " %9.2f %9.2f %9.2f%s\n", id, median(v, n), lo, hi, n < rounds ? "   (not in every round)" : ""
    }
    header = 0
    for (k = 1; k <= ids; k++) {
      id = order[k]
      group = id; sub(/\/[^\/]*$/, "", group)
      name = substr(id, length(group) + 2)
      ref = group "/" reference
      if (name !~ /^toolbreaker/ || !(ref in seen)) continue
      if (!header) {
        printf "\n" col, "minus " reference ", same round"
        for (r = 1; r <= rounds; r++) printf " %8s%d", "round ", r
        printf " %9s\n", "median"
        header = 1
      }
      printf col, id; n = 0
      for (r = 1; r <= rounds; r++) {
        if ((r, id) in value && (r, ref) in value) {
          d[++n] = value[r, id] - value[r, ref]; printf " %9.2f", d[n]
        } else printf " %9s", "-"
      }
      if (n) printf " %9.2f\n", median(d, n); else printf " %9s\n", "-"
    }
  }
' "$scratch/medians"
