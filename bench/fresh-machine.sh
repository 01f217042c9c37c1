#!/usr/bin/env bash
# Measures `make run` as a newcomer meets it (docs/measurements.md, "Fresh
# machine to first report"), without touching this machine's engine, images
# or caches: a container stands in for the fresh machine.
#
# The fresh machine is Debian bookworm as debootstrap makes it (minbase)
# plus what the README assumes a newcomer has: git and make, Go (this
# machine's GOROOT, mounted read-only: the version go.mod names) and a docker
# *client* (this machine's, copied in) with no engine; apt's sources are
# bookworm main alone, as debootstrap writes them. Its HOME is empty: no
# Go module or build cache, no ~/.m2, no ~/.cache/lockcheck; its engine is
# the one scripts/setup.sh installs (Debian's docker.io) and starts inside
# it, with its own data root (a volume: overlay2 does not stack on the
# container's own overlay) and its own networks. The branch is cloned afresh
# (committed work only). Every output line of make run is stamped with the
# seconds since it started; the load is sampled beside it.
#
# What nesting needs and a real machine does not: the capabilities of a
# privileged container (--privileged itself asks for CAP_SYS_RESOURCE, which
# this sandbox withholds), no seccomp or AppArmor profile, the cgroup
# hierarchy writable (the inner engine's containers and their pause), and
# the inner engine's containers under the fresh machine's own cgroup
# (/etc/docker/daemon.json's cgroup-parent), so that the fresh machine's
# cpuacct counts every CPU second its make run used, nodes included.
#
# The inner make run starts a cluster: run this under the project's
# private-cluster lock (flock /tmp/lc/private-cluster.lock ...).
#
# Usage: [FRESH_REF=COMMIT] bench/fresh-machine.sh [--prepare] [TARGET]
#   --prepare   only make the fresh machine's image (debootstrap, about a
#               minute; kept as lockcheck-fresh-machine:bookworm)
#   TARGET      what runs in the fresh clone: run (default: make run),
#               image (make run's steps up to the node image, `lockcheck
#               cluster image`: no cluster, so no lock needed), or
#               setup-test (scripts/setup.sh run, then scripts/setup.sh test)
#   FRESH_REF   the commit to clone (default: the branch's head), e.g. an
#               earlier one to compare with
# Output: .cache/fresh-machine/<stamp>/ (make.log stamped, load.log, facts.txt)
set -euo pipefail
repo=${FRESH_REPO:-$(cd "$(dirname "$0")/.." && pwd)}
# Bash reads a script as it runs: run a copy, so that editing this file
# meanwhile cannot change a measurement under way.
if [ -z "${FRESH_COPY:-}" ]; then
  copy=$(mktemp /tmp/fresh-machine-XXXXXX.sh)
  cp "$0" "$copy"
  FRESH_COPY=$copy FRESH_REPO=$repo exec bash "$copy" "$@"
fi
rm -f "$FRESH_COPY"
machine=lockcheck-fresh-machine:bookworm
mirror=http://deb.debian.org/debian

prepare=0
if [ "${1:-}" = --prepare ]; then
  prepare=1
  shift
fi
target=${1:-run}
case "$target" in
run | image | setup-test) ;;
*) echo "fresh-machine: unknown target '$target' (run, image or setup-test)" >&2; exit 2 ;;
esac

if ! docker image inspect "$machine" >/dev/null 2>&1; then
  root=$(mktemp -d /tmp/fresh-machine-rootfs.XXXXXX)
  trap 'rm -rf "$root"' EXIT
  echo "fresh-machine: debootstrap of the fresh machine (bookworm minbase, git, make)" >&2
  debootstrap --variant=minbase --include=ca-certificates,git,make bookworm "$root" "$mirror" >/dev/null
  # A machine as handed over: no package lists or downloaded packages yet.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" --numeric-owner -c . |
    docker import -c 'ENV PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      -c 'ENV HOME=/root' -c 'CMD ["bash"]' - "$machine" >/dev/null
  rm -rf "$root"
  trap - EXIT
fi
[ "$prepare" = 1 ] && exit 0

stamp=$(date -u +%Y%m%dT%H%M%S)
out=$repo/.cache/fresh-machine/$stamp
mkdir -p "$out"
name=lockcheck-fresh-$$
label=io.lockcheck.cluster=fresh-machine
branch=$(git -C "$repo" rev-parse --abbrev-ref HEAD)
commit=$(git -C "$repo" rev-parse --short "${FRESH_REF:-HEAD}")
goroot=$(go env GOROOT)
client=$(readlink -f "$(command -v docker)")
loadpid=
cleanup() {
  [ -n "$loadpid" ] && kill "$loadpid" 2>/dev/null
  docker rm -f -v "$name" >/dev/null 2>&1 || true
  docker network rm "$name" >/dev/null 2>&1 || true
  rm -rf "$out/clone"
}
trap cleanup EXIT

docker network create --label "$label" "$name" >/dev/null
docker run -d --name "$name" --label "$label" --network "$name" --hostname fresh \
  --cap-add ALL --cap-drop SYS_RESOURCE --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
  -v /sys/fs/cgroup:/sys/fs/cgroup:rw -v /var/lib/docker -v "$goroot:/usr/local/go:ro" \
  "$machine" sleep infinity >/dev/null
id=$(docker inspect -f '{{.Id}}' "$name")
parent=$(docker inspect -f '{{.HostConfig.CgroupParent}}' "$name")
parent=${parent:-/docker}
docker exec "$name" mkdir -p /etc/docker
echo "{\"cgroup-parent\": \"$parent/$id/engine\"}" | docker exec -i "$name" tee /etc/docker/daemon.json >/dev/null
docker cp "$client" "$name:/usr/local/bin/docker" >/dev/null
# The certificate authorities this machine trusts beyond Debian's (an
# egress proxy's, where there is one): a machine of this workplace has them,
# and Go's module proxy and Maven Central are reached through it.
for crt in /usr/local/share/ca-certificates/*.crt; do
  [ -e "$crt" ] && docker cp "$crt" "$name:/usr/local/share/ca-certificates/" >/dev/null
done
docker exec "$name" update-ca-certificates >/dev/null 2>&1
git clone -q --branch "$branch" "$repo" "$out/clone"
git -C "$out/clone" checkout -q "$commit"
docker cp "$out/clone" "$name:/root/lockcheck" >/dev/null

# The machine as the newcomer has it: a docker client, no engine, none of
# the tools set-up installs, empty caches.
{
  echo "commit: $branch $commit"
  echo "host: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -r)"
  echo "fresh machine: $(docker exec "$name" sh -c '. /etc/os-release; echo $PRETTY_NAME'), $(docker exec "$name" go version), $(docker exec "$name" docker --version)"
  for probe in "docker info" "command -v dockerd" "command -v debootstrap" "command -v mvn" "command -v java" \
    "ls /root/go /root/.cache /root/.m2"; do
    if docker exec "$name" sh -c "$probe" >/dev/null 2>&1; then
      echo "fresh machine: '$probe' succeeds: not a fresh machine" >&2
      exit 1
    fi
  done
  echo "fresh machine checked: no engine, dockerd, debootstrap, mvn or java; no caches in HOME"
} | tee "$out/facts.txt"

cpuacct() { cat "/sys/fs/cgroup/cpuacct$parent/$id/cpuacct.usage" 2>/dev/null || echo 0; }
(while :; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 5; done) >"$out/load.log" &
loadpid=$!

case "$target" in
run) cmd='make run' ;;
image) cmd='make --no-print-directory -j4 image-inputs cli && bin/lockcheck cluster image' ;;
setup-test) cmd='scripts/setup.sh run && scripts/setup.sh test' ;;
esac
echo "fresh-machine: $cmd in $name (log: $out/make.log); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
t0=$EPOCHREALTIME
cpu0=$(cpuacct)
set +e
docker exec -w /root/lockcheck "$name" bash -c "$cmd" 2>&1 | while IFS= read -r line; do
  now=$EPOCHREALTIME
  el=$(((${now/./} - ${t0/./}) / 100000))
  printf '%4d.%d %s\n' $((el / 10)) $((el % 10)) "$line"
done | tee "$out/make.log"
rc=${PIPESTATUS[0]}
set -e
t1=$EPOCHREALTIME
wall=$(((${t1/./} - ${t0/./}) / 100000))
cpu=$((($(cpuacct) - cpu0) / 100000000))

# When things ended, from what they left (epoch seconds in the fresh
# machine; one clock with this one).
since() { [ -n "$1" ] && [ "$1" != 0 ] && echo "$(((${1%%.*} * 10 - ${t0/./} / 100000) / 10)) s" || echo "-"; }
x() { docker exec -w /root/lockcheck "$name" sh -c "$1" 2>/dev/null || true; }
{
  echo "exit: $rc"
  printf 'wall: %d.%d s (%d min %d s)\n' $((wall / 10)) $((wall % 10)) $((wall / 600)) $((wall / 10 % 60))
  printf 'CPU used in the fresh machine (nodes included): %d.%d s\n' $((cpu / 10)) $((cpu % 10))
  echo "load at the start/end: $(head -1 "$out/load.log" | cut -d' ' -f2-) / $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "load range (1 min): $(awk '{print $2}' "$out/load.log" | sort -n | sed -n '1p;$p' | paste -sd- -)"
  echo "bin/lockcheck written at: $(since "$(x 'stat -c %Y bin/lockcheck')")"
  echo "dockerd answered by: $(since "$(x 'stat -c %Y /var/run/docker.pid')")"
  echo "rootfs tarball written at: $(since "$(x 'stat -c %Y ~/.cache/lockcheck/rootfs-*.tar | head -1')")"
  for img in $(x "docker images --format '{{.Repository}}:{{.Tag}}' | grep lockcheck"); do
    echo "image $img created at: $(since "$(x "date -d \"\$(docker image inspect -f '{{.Created}}' $img)\" +%s")")"
  done
  echo "engine: $(x "docker version --format '{{.Server.Version}}'")"
  echo "caches after: $(x 'du -sh /root/go/pkg/mod /root/.cache/go-build /root/.m2 /root/.cache/lockcheck /var/cache/apt/archives 2>/dev/null | tr "\t\n" ": "')"
  echo "report: $(x 'ls store/*/*/report.html 2>/dev/null')"
} | tee -a "$out/facts.txt"
if [ "$target" = run ]; then
  docker exec -w /root/lockcheck "$name" bin/lockcheck cluster down >/dev/null 2>&1 || true
fi
exit "$rc"
