#!/usr/bin/env bash
# Memory of the harness over a long run: starts `lockcheck run` and samples
# its resident set size (VmRSS) every INTERVAL seconds. The history is
# streamed to disk, so the RSS should stay flat however long the run.
#
#   bench/memsoak.sh [DURATION] [LOCK] [NEMESIS]      (default 1h lease-fenced all)
#
# Needs bin/lockcheck (make build; or BIN=path) and a cluster (lockcheck cluster up).
# Writes store/memsoak-<time>.csv (seconds,rss_kib) and prints a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-1h}
LOCK=${2:-lease-fenced}
NEMESIS=${3:-all}
INTERVAL=${INTERVAL:-10}
BIN=${BIN:-bin/lockcheck}
STORE=${STORE:-store}
mkdir -p "$STORE"
csv="$STORE/memsoak-$(date -u +%Y%m%dT%H%M%S).csv"
echo "seconds,rss_kib" >"$csv"
"$BIN" run --lock "$LOCK" --nemesis "$NEMESIS" --time "$DURATION" --store "$STORE" --locks 3 \
	>"$csv.out" 2>"$csv.err" &
pid=$!
start=$(date +%s)
while kill -0 "$pid" 2>/dev/null; do
	rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
	[ -n "$rss" ] && echo "$(( $(date +%s) - start )),$rss" >>"$csv"
	sleep "$INTERVAL"
done
rc=0; wait "$pid" || rc=$?
cat "$csv.out"
# Summary: the first sample after the first minute (warm-up) against the
# largest and the last.
awk -F, 'NR>1 && $1>=60 && !w {w=$2} NR>1 {if ($2>m) m=$2; l=$2; n++}
	END {printf "memsoak: %d samples; RSS after 1 min %d KiB, max %d KiB, last %d KiB\n", n, w, m, l}' "$csv"
echo "memsoak: samples in $csv; lockcheck run exited $rc"
