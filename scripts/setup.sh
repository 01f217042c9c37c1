#!/usr/bin/env bash
# Installs what lockcheck needs on a fresh Debian machine and starts Docker.
# Idempotent: it installs only what is missing, and a machine that has
# everything is left alone (root is then not needed). See README "Set-up".
#
#   docker.io     Docker Engine (the nodes run in containers); dockerd is
#                 started with its log in /var/log/dockerd.log if none answers
#   debootstrap   builds the node image's Debian root filesystem
#   maven         resolves the Cassandra server jars from Maven Central
#   chromium, chromium-driver   the report's browser test
#
# Go (see go.mod for the version) must be installed already.
set -euo pipefail

log() { echo "setup: $*" >&2; }

# command -> Debian package
declare -A pkg_of=(
  [docker]=docker.io
  [debootstrap]=debootstrap
  [mvn]=maven
  [chromium]=chromium
  [chromedriver]=chromium-driver
)

missing=()
for cmd in docker debootstrap mvn chromium chromedriver; do
  if ! command -v "$cmd" >/dev/null 2>&1 && ! [ -x "/usr/sbin/$cmd" ]; then
    missing+=("${pkg_of[$cmd]}")
  fi
done

is_debian() { [ -r /etc/debian_version ] && command -v apt-get >/dev/null 2>&1; }

if ((${#missing[@]} > 0)); then
  if [ "$(id -u)" -ne 0 ] || ! is_debian; then
    echo "setup: missing ${missing[*]}: install them (Debian: apt-get install ${missing[*]}, as root) and run again" >&2
    exit 1
  fi
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # No recommends: docker.io's would pull needrestart and apparmor.
  apt-get install -y -qq --no-install-recommends "${missing[@]}" ca-certificates xz-utils >/dev/null
fi

if ! command -v go >/dev/null 2>&1; then
  echo "setup: go not found: install Go $(sed -n 's/^go //p' "$(dirname "$0")/../go.mod") from https://go.dev/dl/ and put it on PATH" >&2
  exit 1
fi

# Docker: an engine must answer.
if ! docker info >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: no Docker engine answers: start dockerd (as root), or add $(id -un) to the docker group" >&2
    exit 1
  fi
  if [ -d /run/systemd/system ] && systemctl start docker >/dev/null 2>&1; then
    log "started docker with systemd"
  else
    log "starting dockerd (log: /var/log/dockerd.log)"
    setsid nohup dockerd >>/var/log/dockerd.log 2>&1 </dev/null &
  fi
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  if ! docker info >/dev/null 2>&1; then
    echo "setup: dockerd did not answer within 60 s; see /var/log/dockerd.log" >&2
    exit 1
  fi
fi
log "ok: docker $(docker version --format '{{.Server.Version}}'), debootstrap, maven, chromium, $(go version | cut -d' ' -f3)"
