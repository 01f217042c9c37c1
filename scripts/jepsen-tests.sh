#!/usr/bin/env bash
# Prints the -run pattern of the tests in the jepsen files (build tag
# jepsen): ^(TestA|TestB|...)$. make jepsen runs only these: the same
# packages' other tests are make unit's and ran there already.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(grep -l '^//go:build jepsen' $(find . -name '*_test.go' -not -path './.cache/*' -not -path './plugins/*'))
names=$(grep -h -o '^func Test[A-Za-z0-9_]*(t \*testing\.T)' $files | sed 's/^func //; s/(.*//' | sort -u | paste -sd'|')
[ -n "$names" ] || { echo "jepsen-tests.sh: no jepsen test found" >&2; exit 1; }
echo "^($names)\$"
