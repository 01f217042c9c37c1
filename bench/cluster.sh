#!/usr/bin/env bash
# Measures the cluster foundation (figures go to README "Measurements"):
#   1. the node image build with empty caches: debootstrap into a fresh cache
#      directory, Maven into an empty local repository, import, docker build
#      (the Debian base image is re-imported only if it is absent, so on a
#      fresh machine this is the build from nothing);
#   2. `lockcheck cluster up` of 3 nodes with the image cached, RUNS times;
#   3. memory per node (docker stats) of the last cluster, idle 30 s after up.
# Uses its own cluster name (lockcheck-bench): a running shared cluster is
# left alone, but it shares the 2 cores, so stop it for clean figures.
# Usage: bench/cluster.sh [--skip-build]      RUNS=3 by default.
set -euo pipefail
cd "$(dirname "$0")/.."
export TESTCONTAINERS_RYUK_DISABLED=true
runs=${RUNS:-3}
name=lockcheck-bench
dir=${BENCH_DIR:-.cache/bench-cluster}
mkdir -p "$dir"
go build -o "$dir/lockcheck" ./cmd/lockcheck
lc="$dir/lockcheck"
trap '"$lc" cluster down --name "$name" >/dev/null 2>&1 || true' EXIT

secs() { date +%s.%N; }
since() { echo "$(secs) - $1" | bc | xargs printf '%.1f'; }

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "${1:-}" != "--skip-build" ]; then
  # The image of the current inputs, removed if no container uses it.
  ref=$("$lc" cluster image 2>/dev/null)
  if ! docker rmi "$ref" >/dev/null 2>&1; then
    echo "image build: skipped ($ref is in use by a container)"
  else
    fresh=$(mktemp -d)
    t=$(secs)
    XDG_CACHE_HOME="$fresh/cache" MAVEN_OPTS="-Dmaven.repo.local=$fresh/m2" \
      "$lc" cluster image 2> >(tee "$dir/build.log" >&2) >/dev/null
    echo "image build with empty caches: $(since "$t") s  (phases in $dir/build.log)"
    rm -rf "$fresh"
  fi
fi

for i in $(seq 1 "$runs"); do
  "$lc" cluster down --name "$name" >/dev/null
  t=$(secs)
  "$lc" cluster up --name "$name" >/dev/null 2>"$dir/up.log"
  wall=$(since "$t")
  # CPU the nodes used until up (JVMs and nodetool), from their cgroups
  # (cgroup v1 or v2): the figure that does not depend on the load.
  cpu=0
  for id in $(docker ps -q --no-trunc --filter "label=io.lockcheck.cluster=$name"); do
    for f in /sys/fs/cgroup/cpuacct/docker/$id/cpuacct.usage /sys/fs/cgroup/system.slice/docker-$id.scope/cpu.stat; do
      [ -r "$f" ] || continue
      case $f in
        *cpuacct.usage) ns=$(cat "$f") ;;
        *) ns=$(($(awk '/^usage_usec/{print $2}' "$f") * 1000)) ;;
      esac
      cpu=$(echo "$cpu + $ns / 1000000000" | bc -l)
    done
  done
  printf 'cluster up (3 nodes, cached image) run %d: %s s wall, %.1f s CPU in the nodes, load %s\n' \
    "$i" "$wall" "$cpu" "$(cut -d' ' -f1 /proc/loadavg)"
done

sleep 30
echo "memory per node, idle 30 s after up:"
docker stats --no-stream --format '  {{.Name}}  {{.MemUsage}}  cpu {{.CPUPerc}}' \
  $(docker ps -q --filter "label=io.lockcheck.cluster=$name")
