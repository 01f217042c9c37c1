#!/usr/bin/env bash
# Fetches what the default node image is built from while Go builds the CLI
# (make run): on a fresh machine the image's inputs take a minute or two and
# the CLI's first build about as long, and neither needs the other. Package
# cluster builds the image when `lockcheck cluster up` first runs; this only
# gives it a head start, each step as package cluster does it:
#   rootfs  the Debian root filesystem: debootstrap into the cache's tarball
#           (~/.cache/lockcheck, or $XDG_CACHE_HOME/lockcheck); needs only
#           debootstrap (scripts/setup.sh rootfs), not the engine
#   jars    the Cassandra jars: Maven resolves them (into ~/.m2) and they are
#           kept in the cache's jars-<hash of the POM>, where the build takes
#           them instead of asking Maven again
#   import  the tarball imported as the base image (needs the engine)
# (all three, in that order, when none is named). What to fetch comes from
# scripts/image-inputs.env, rendered from package cluster's tables (`go test
# ./cluster -run TestImageInputsFile`). Each step holds the build's lock
# (build.lock in the cache, shared among the steps), so that a `cluster up`
# started meanwhile waits for them and finds what they fetched.
#
# Best effort: a machine that has the node image, or a step's input, is left
# alone at once; a step that fails is said in one line and left to the
# build, which fetches what is missing and reports its own error.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=image-inputs.env
. "$here/image-inputs.env"

log() { echo "image-inputs: $*" >&2; }
secs() { echo $((${EPOCHREALTIME/./} / 1000000)); }

steps=("$@")
((${#steps[@]} == 0)) && steps=(rootfs jars import)
for s in "${steps[@]}"; do
  case "$s" in
  rootfs | jars | import) ;;
  *) log "unknown step '$s': rootfs, jars or import"; exit 2 ;;
  esac
done

cache=${XDG_CACHE_HOME:-$HOME/.cache}/lockcheck
tarball=$cache/$TARBALL
jars=$cache/$JARS
engine=0
docker info >/dev/null 2>&1 && engine=1
has_image() { [ "$engine" = 1 ] && docker image inspect "$1" >/dev/null 2>&1; }

# The image is built: nothing to fetch.
has_image "$NODE_IMAGE" && exit 0

mkdir -p "$cache"
exec 9>"$cache/build.lock"
flock -s 9
work=$(mktemp -d "$cache/inputs-XXXXXX")
trap 'rm -rf "$work"' EXIT

rootfs() {
  local t root
  if [ -e "$tarball" ] || has_image "$BASE_IMAGE"; then
    return 0
  fi
  if [ "$(id -u)" != 0 ] || ! command -v debootstrap >/dev/null 2>&1; then
    return 0 # the build says what is missing
  fi
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
    log "tar of the root filesystem failed (cluster up tries again)"
    return 0
  fi
  mv "$tarball.tmp" "$tarball"
  log "debootstrap done in $(($(secs) - t)) s: $tarball"
}

jars() {
  local t
  if [ -e "$jars" ] || ! command -v mvn >/dev/null 2>&1; then
    return 0
  fi
  t=$(secs)
  log "maven: cassandra-all $CASSANDRA and its runtime dependencies"
  sed "s/{{.Cassandra}}/$CASSANDRA/" "$here/../cluster/image/pom.xml.tmpl" >"$work/pom.xml"
  # The build's own goal; the POM is the build's (TestImageInputsPOM), so
  # the jars are kept under the name the build looks for.
  if mvn -B -q -f "$work/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$work/lib" >"$work/maven.log" 2>&1 &&
    ls "$work"/lib/cassandra-all-*.jar >/dev/null 2>&1 && mv "$work/lib" "$jars"; then
    log "maven done in $(($(secs) - t)) s: $(ls "$jars" | wc -l) jars in $jars"
  else
    log "maven failed (cluster up tries again): $(tail -1 "$work/maven.log")"
  fi
}

import() {
  local t
  if [ "$engine" = 0 ] || [ ! -e "$tarball" ] || has_image "$BASE_IMAGE"; then
    return 0
  fi
  t=$(secs)
  if docker import "$tarball" "$BASE_IMAGE" >/dev/null 2>"$work/import.log"; then
    log "imported as $BASE_IMAGE in $(($(secs) - t)) s"
  else
    log "import failed (cluster up tries again): $(tail -1 "$work/import.log")"
  fi
}

for s in "${steps[@]}"; do
  "$s"
done
exit 0
