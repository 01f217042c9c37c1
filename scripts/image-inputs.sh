#!/usr/bin/env bash
# Fetches what the default node image is built from while Go builds the CLI
# (make run): on a fresh machine the image's inputs take a minute or two and
# the CLI's first build about as long, and neither needs the other. Package
# cluster builds the image when `lockcheck cluster up` first runs; this only
# gives it a head start:
#   - the Debian root filesystem: debootstrap into the cache's tarball
#     (~/.cache/lockcheck, or $XDG_CACHE_HOME/lockcheck), imported as the
#     base image
#   - the Cassandra jars: Maven resolves them into the local repository
#     (~/.m2), where the build's own Maven then finds them
# side by side, each as package cluster does it, with what
# scripts/image-inputs.env says (rendered from package cluster's tables:
# `go test ./cluster -run TestImageInputsFile`). It holds the build's lock
# (build.lock in the cache) meanwhile, so that a `cluster up` started then
# waits for it and finds the tarball and the jars.
#
# Best effort: a machine that has the node image, or the inputs, is left
# alone at once; a step that fails is said in one line and left to the
# build, which fetches what is missing and reports its own error.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=image-inputs.env
. "$here/image-inputs.env"

log() { echo "image-inputs: $*" >&2; }
secs() { echo $((${EPOCHREALTIME/./} / 1000000)); }

cache=${XDG_CACHE_HOME:-$HOME/.cache}/lockcheck
tarball=$cache/$TARBALL
jar=$HOME/.m2/repository/org/apache/cassandra/cassandra-all/$CASSANDRA/cassandra-all-$CASSANDRA.jar
engine=0
docker info >/dev/null 2>&1 && engine=1

if [ "$engine" = 1 ] && docker image inspect "$NODE_IMAGE" >/dev/null 2>&1; then
  exit 0 # the image is built: nothing to fetch
fi
need_rootfs=1
if [ -e "$tarball" ] || { [ "$engine" = 1 ] && docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; }; then
  need_rootfs=0
elif [ "$(id -u)" != 0 ] || ! command -v debootstrap >/dev/null 2>&1; then
  need_rootfs=0 # the build says what is missing
fi
need_jars=1
if [ -e "$jar" ] || ! command -v mvn >/dev/null 2>&1; then
  need_jars=0
fi
[ "$need_rootfs" = 0 ] && [ "$need_jars" = 0 ] && exit 0

mkdir -p "$cache"
exec 9>"$cache/build.lock"
flock 9
work=$(mktemp -d "$cache/inputs-XXXXXX")
trap 'rm -rf "$work"' EXIT

rootfs() {
  local t root
  t=$(secs)
  root=$work/rootfs
  mkdir "$root"
  log "debootstrap $SUITE ($PACKAGES)"
  if ! debootstrap --variant="$VARIANT" --include="$PACKAGES" "$SUITE" "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1; then
    log "debootstrap failed (cluster up tries again): $(tail -1 "$work/debootstrap.log")"
    return 0
  fi
  # As package cluster does: apt's caches are of no use in the image.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  if ! tar -C "$root" --numeric-owner -cf "$tarball.tmp" .; then
    rm -f "$tarball.tmp"
    log "tar of the root filesystem failed"
    return 0
  fi
  mv "$tarball.tmp" "$tarball"
  rm -rf "$root"
  log "debootstrap done in $(($(secs) - t)) s: $tarball"
  if [ "$engine" = 1 ]; then
    t=$(secs)
    if docker import "$tarball" "$BASE_IMAGE" >/dev/null 2>"$work/import.log"; then
      log "imported as $BASE_IMAGE in $(($(secs) - t)) s"
    else
      log "import failed (cluster up tries again): $(tail -1 "$work/import.log")"
    fi
  fi
}

jars() {
  local t
  t=$(secs)
  log "maven: cassandra-all $CASSANDRA and its runtime dependencies"
  sed "s/{{.Cassandra}}/$CASSANDRA/" "$here/../cluster/image/pom.xml.tmpl" >"$work/pom.xml"
  # The build's own goal, so that its plug-ins are fetched once too.
  if mvn -B -q -f "$work/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$work/lib" >"$work/maven.log" 2>&1; then
    log "maven done in $(($(secs) - t)) s: $(ls "$work/lib" | wc -l) jars"
  else
    log "maven failed (cluster up tries again): $(tail -1 "$work/maven.log")"
  fi
}

[ "$need_jars" = 1 ] && jars &
[ "$need_rootfs" = 1 ] && rootfs
wait
exit 0
