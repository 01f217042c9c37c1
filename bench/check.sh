#!/usr/bin/env bash
# Measures `lockcheck check` and `lockcheck report` end to end on synthetic
# histories (bench/histgen): wall time, CPU time and peak resident memory.
# Usage: bench/check.sh [events...]   (default: 100000 1000000)
# Histories go to $BENCH_DIR (default .cache/bench); delete it afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BENCH_DIR:-.cache/bench}
mkdir -p "$dir"
go build -o "$dir/lockcheck" ./cmd/lockcheck
go build -o "$dir/histgen" ./bench/histgen
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(100000 1000000)
cases=(
  "many-locks/valid|-clients 100 -locks 1000 -fail 0.05 -info 0.02"
  "many-locks/overlap|-clients 100 -locks 1000 -fail 0.05 -info 0.02 -anomaly overlap"
  "hot-lock/valid|-clients 50 -locks 1 -fail 0.05 -info 0.05 -lease 200ms -nemesis 10s"
  "hot-lock/lost|-clients 50 -locks 1 -fail 0.05 -info 0.05 -lease 200ms -nemesis 10s -anomaly lost"
)
printf "%-9s %-20s %-8s %4s %8s %8s %9s   %s\n" events case verdict exit wall_s cpu_s peak_MiB "report: wall_s peak_MiB"
for n in "${sizes[@]}"; do
  for c in "${cases[@]}"; do
    name=${c%%|*} args=${c#*|}
    run="$dir/run-$n-${name//\//-}"
    mkdir -p "$run"
    # shellcheck disable=SC2086
    "$dir/histgen" -o "$run/history.jsonl" -events "$n" $args
    set +e
    /usr/bin/time -f "%e %U %S %M" -o "$dir/time" "$dir/lockcheck" check "$run/history.jsonl" >"$dir/out" 2>&1
    code=$?
    set -e
    read -r wall user sys rss < <(tail -1 "$dir/time")
    verdict=$(head -1 "$dir/out" | awk '{print $2}')
    /usr/bin/time -f "%e %M" -o "$dir/rtime" "$dir/lockcheck" report "$run" >/dev/null 2>&1 || true
    read -r rwall rrss < <(tail -1 "$dir/rtime")
    printf "%-9s %-20s %-8s %4s %8s %8.2f %9d   %s %d\n" "$n" "$name" "$verdict" "$code" "$wall" \
      "$(echo "$user + $sys" | bc)" $((rss / 1024)) "$rwall" $((rrss / 1024))
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
