#!/usr/bin/env bash
# Reads the logs of `go test -v` that make test's streams keep in .cache/:
#   test-log.sh lines    (a filter) the lines a terminal gets as the tests run:
#                        each package's ok/FAIL line and every failed test's line
#   test-log.sh failures LOG...  the output of every failed test, as go test
#                        without -v would have printed it
#   test-log.sh times LOG...     each package's time beside the sum of its
#                        top-level tests' (the rest is its TestMain: the wait for
#                        the shared cluster's lease and the heal), then the
#                        slowest tests and subtests, slowest first
# make test keeps -v's output so that where a stream's time goes can be read
# per test after the fact (docs/measurements.md#make-test).
set -euo pipefail
mode=${1:-}
shift || true
case "$mode" in
lines)
  grep --line-buffered -E '^(ok |FAIL|panic:)|^[[:space:]]*--- FAIL' || true
  ;;
failures)
  # go test -v names the test whose output follows (=== RUN, CONT, NAME),
  # so each test's lines are kept until its --- line says how it ended.
  awk '
    /^=== (RUN|CONT|NAME|PAUSE) / { cur = $3; next }
    /^[[:space:]]*--- (PASS|FAIL|SKIP): / {
      name = $3
      if ($2 == "FAIL:") { printf "%s\n%s", $0, out[name] }
      delete out[name]
      next
    }
    /^(ok |FAIL|PASS$|panic:)/ { if (/^(FAIL|panic:)/) print; next }
    cur != "" { out[cur] = out[cur] $0 "\n" }
  ' "$@"
  ;;
times)
  # A stream that never ran (its cluster or plug-ins failed) has no log.
  logs=()
  for f in "$@"; do [ -f "$f" ] && logs+=("$f"); done
  [ ${#logs[@]} -gt 0 ] || exit 0
  out=$(awk '
    /^--- (PASS|FAIL): / {
      d = $4; gsub(/[()s]/, "", d); top += d
      n++; name[n] = $3; dur[n] = d; next
    }
    /^[[:space:]]+--- (PASS|FAIL): / {
      d = $4; gsub(/[()s]/, "", d)
      n++; name[n] = $3; dur[n] = d; next
    }
    /^(ok |FAIL)[[:space:]]+[^[:space:]]+[[:space:]]+[0-9.]+s/ {
      pkg = $2; sub(/^.*\/lockcheck\/lockcheck\/?/, "", pkg); if (pkg == "") pkg = "."
      t = $3; sub(/s$/, "", t)
      printf "P package %-20s %7.1fs, its top-level tests %7.1fs\n", pkg, t, top
      for (i = 1; i <= n; i++) printf "T %9.1fs %s %s\n", dur[i], pkg, name[i]
      n = 0; top = 0
    }
  ' "${logs[@]}")
  grep '^P ' <<<"$out" | cut -c3- || true
  echo "slowest tests (top-level and subtests):"
  grep '^T ' <<<"$out" | cut -c3- | sort -rn | head -n "${TEST_LOG_TOP:-40}" || true
  ;;
*)
  echo "usage: test-log.sh lines | failures LOG... | times LOG..." >&2
  exit 2
  ;;
esac
