#!/usr/bin/env bash
# Measures `lockcheck check` and `lockcheck report` end to end on synthetic
# histories (bench/histgen): wall time, CPU time (user+sys) and peak resident
# memory, with the load average, since the machine may be shared.
# Usage: bench/check.sh [events...]   (default: 100000 1000000 10000000)
#   REPORT=0      skip `lockcheck report` (it holds the history's ops for
#                 its timeline and charts, so it is the heavier of the two)
#   PORCUPINE=1   also run porcupine alone (full model, every lock a
#                 partition; checker's BenchmarkPlainPorcupineFile) on the
#                 valid histories, bounded by PORCUPINE_TIMEOUT (default 5m);
#                 on the hot lock only up to PORCUPINE_HOT_MAX events
#                 (default 200000: it needs ~15 GiB at 1M).
#   CASES=regex   run only the cases whose name matches (default: all)
# Histories go to $BENCH_DIR (default .cache/bench); delete it afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BENCH_DIR:-.cache/bench}
mkdir -p "$dir"
go build -o "$dir/lockcheck" ./cmd/lockcheck
go build -o "$dir/histgen" ./bench/histgen
if [ "${PORCUPINE:-0}" = 1 ]; then go test -c -o "$dir/checker.test" ./checker; fi
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(100000 1000000 10000000)
cases=(
  "many-locks/valid|-clients 100 -locks 1000 -fail 0.05 -info 0.02"
  "many-locks/overlap|-clients 100 -locks 1000 -fail 0.05 -info 0.02 -anomaly overlap"
  "1000-locks/valid|-clients 1000 -locks 1000 -fail 0 -info 0"
  "1000-locks-2500-procs/valid|-clients 2500 -locks 1000 -fail 0 -info 0"
  "hot-lock/valid|-clients 50 -locks 1 -fail 0.05 -info 0.05 -lease 200ms -nemesis 10s"
  "hot-lock/lost|-clients 50 -locks 1 -fail 0.05 -info 0.05 -lease 200ms -nemesis 10s -anomaly lost"
)
measure() { # out-file command...: prints "wall cpu peak_MiB"
  local out=$1
  shift
  /usr/bin/time -f "%e %U %S %M" -o "$dir/time" "$@" >"$out" 2>&1 || true
  read -r wall user sys rss < <(tail -1 "$dir/time")
  echo "$wall $(echo "$user + $sys" | bc) $((rss / 1024))"
}
printf "%-9s %-20s %-8s %4s %8s %8s %9s   %s\n" events case verdict exit wall_s cpu_s peak_MiB "load | report: wall_s cpu_s peak_MiB"
for n in "${sizes[@]}"; do
  for c in "${cases[@]}"; do
    name=${c%%|*} args=${c#*|}
    [[ $name =~ ${CASES:-.} ]] || continue
    run="$dir/run-$n-${name//\//-}"
    mkdir -p "$run"
    # shellcheck disable=SC2086
    "$dir/histgen" -o "$run/history.jsonl" -events "$n" $args
    load=$(cut -d' ' -f1 /proc/loadavg)
    set +e
    /usr/bin/time -f "%e %U %S %M" -o "$dir/time" "$dir/lockcheck" check "$run/history.jsonl" >"$dir/out" 2>&1
    code=$?
    set -e
    read -r wall user sys rss < <(tail -1 "$dir/time")
    verdict=$(head -1 "$dir/out" | awk '{print $2}')
    rep="-"
    if [ "${REPORT:-1}" = 1 ]; then
      rep=$(measure "$dir/rout" "$dir/lockcheck" report "$run")
    fi
    printf "%-9s %-20s %-8s %4s %8s %8.2f %9d   %s | %s\n" "$n" "$name" "$verdict" "$code" "$wall" \
      "$(echo "$user + $sys" | bc)" $((rss / 1024)) "$load" "$rep"
    if [ "${PORCUPINE:-0}" = 1 ] && [[ $name == */valid ]] && { [[ $name != hot-lock/* ]] || [ "$n" -le "${PORCUPINE_HOT_MAX:-200000}" ]; }; then
      p=$(LOCKCHECK_BENCH_HISTORY="$run/history.jsonl" LOCKCHECK_BENCH_TIMEOUT=${PORCUPINE_TIMEOUT:-5m} \
        measure "$dir/pout" "$dir/checker.test" -test.run '^$' -test.bench PlainPorcupineFile -test.benchtime 1x)
      printf "%-9s %-20s %s (porcupine alone: wall_s cpu_s peak_MiB; %s)\n" "$n" "$name" "$p" \
        "$(grep -o '[-0-9.]* ok' "$dir/pout" | sed 's/^1[.0]* ok/linearizable/; s/^0[.0]* ok/timed out/; s/^-1[.0]* ok/not linearizable/')"
    fi
    [ "$n" -lt 10000000 ] || rm -f "$run/history.jsonl" # 1 GB each
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
