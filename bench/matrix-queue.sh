#!/usr/bin/env bash
# Runs a queue of single matrix runs on one pre-started cluster, so that a
# row's 20 runs spread over streams and sessions (issue 22's membership rows
# took 0.32 runs a minute with three streams on 2 cores, whatever the count).
# Usage: bench/matrix-queue.sh STREAM QUEUE [BIN]
#   STREAM  the matrix's --cluster: a row on configuration KEY runs on the
#           cluster STREAM-KEY, which should already run (lockcheck cluster
#           up --name STREAM-4n-1spare --nodes 4 --spares 1 [--paxos v2]),
#           else the matrix starts and removes one per run
#   QUEUE   a file of "ROW<TAB>FIRST" lines; streams sharing it pop lines
#           under a lock, each run is `matrix --first FIRST --repeat 1`
#   BIN     the lockcheck binary (default bin/lockcheck; copy it aside so a
#           rebuild does not change a queue half way)
# Each run appends its rate line to QUEUE.rec-STREAM.jsonl (append those to
# scenario/rates.jsonl once every stream is idle: a matrix keeps its record
# file open) and its output to QUEUE.out/. A run that errs (exit 2: no
# verdict) goes to QUEUE.failed and stops the stream; touch QUEUE.stop to end
# every stream after its current run.
set -uo pipefail
stream=$1 queue=$2 bin=${3:-bin/lockcheck}
mkdir -p "$queue.out"
log() { echo "$(date -u +%T) $stream $* load $(cut -d' ' -f1 /proc/loadavg)" >>"$queue.log"; }
while [ ! -e "$queue.stop" ]; do
  line=$(flock "$queue.lock" sh -c 'head -1 "$1"; sed -i 1d "$1"' _ "$queue")
  [ -n "$line" ] || break
  row=${line%%$'\t'*} first=${line##*$'\t'}
  log "start $row $first"
  # The row name as a whole-name regular expression: '+' is literal.
  "$bin" matrix --cluster "$stream" --rows "^${row//+/\\+}\$" --first "$first" --repeat 1 \
    --record "$queue.rec-$stream.jsonl" >"$queue.out/$stream-$first-${row//\//_}.log" 2>&1
  rc=$?
  log "end rc=$rc $row $first"
  if [ "$rc" = 2 ]; then
    echo "$line" >>"$queue.failed"
    break
  fi
done
log done
