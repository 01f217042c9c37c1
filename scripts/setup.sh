#!/usr/bin/env bash
# Installs what lockcheck needs on a fresh Debian machine and starts Docker.
# Idempotent: it installs only what is missing, and a machine that has
# everything is left alone (root is then not needed). See docs/setup.md.
#
#   scripts/setup.sh run    what `make run` needs: the engine, and what builds
#                           the node image
#   scripts/setup.sh rootfs debootstrap alone: make run installs it first, so
#                           that the node image's root filesystem is made
#                           while the rest installs and Go builds
#   scripts/setup.sh test   (the default) the run's set plus what the tests
#                           need: `make test`
#
# Every tool is judged by running it, never by its name on PATH: a docker
# *client* without an engine is common (CI images, Docker Desktop leftovers),
# and a command found on PATH may not run at all.
#
# The run's set:
#   Docker Engine  an engine must answer `docker info`; when none does, a
#                  dockerd is started (systemd, else in the background with
#                  its log in /var/log/dockerd.log), and when no dockerd
#                  exists, Debian's docker.io is installed first, even when a
#                  docker client is already on PATH
#   debootstrap    builds the node image's Debian root filesystem
#   maven          resolves the Cassandra server jars from Maven Central
# The test set adds:
#   chromium       the report's browser test (reports/browser_test.go drives
#                  it over the DevTools protocol: no chromedriver)
#   libfaketime    skews the clocks of --lock-cmd plug-ins (client-clock);
#                  judged by its library file, it has no command
#   python3-venv, default-jdk-headless   build the reference plug-ins
#                  (make plugins: a venv with cassandra-driver, javac)
#
# Go (see go.mod for the version) must be installed already.
set -euo pipefail

log() { echo "setup: $*" >&2; }
die() { echo "setup: $*" >&2; exit 1; }

set_=${1:-test}
case "$set_" in
run | test | rootfs) ;;
*) die "unknown set '$set_': use 'run' (make run), 'test' (make test, the default) or 'rootfs' (debootstrap alone)" ;;
esac

# Each probe runs the tool as lockcheck will; a probe that fails means the
# package must be (re)installed.
probe_debootstrap() { debootstrap --version >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ]; }
probe_mvn() { mvn -v >/dev/null 2>&1; }
probe_chromium() { chromium --version >/dev/null 2>&1; }
probe_faketime() { compgen -G '/usr/lib/*/faketime/libfaketimeMT.so.1' >/dev/null; }
probe_venv() { python3 -c 'import venv, ensurepip' >/dev/null 2>&1; }
probe_javac() { javac -version >/dev/null 2>&1; }
engine_answers() { docker info >/dev/null 2>&1; }
dockerd_path() {
  local d
  for d in "$(command -v dockerd 2>/dev/null || true)" /usr/sbin/dockerd /usr/bin/dockerd; do
    [ -n "$d" ] && [ -x "$d" ] && "$d" --version >/dev/null 2>&1 && { echo "$d"; return 0; }
  done
  return 1
}

is_debian() { [ -r /etc/debian_version ] && command -v apt-get >/dev/null 2>&1; }
# The package lists once: the rootfs set's update, a minute before the run
# set's, serves both (the stamp of apt's last successful update that
# Debian's periodic apt jobs read).
apt_update() {
  local stamp=/var/lib/apt/periodic/update-success-stamp
  find "$stamp" -mmin -10 2>/dev/null | grep -q . && return 0
  apt-get update -qq && mkdir -p "${stamp%/*}" && touch "$stamp"
}

missing=()
probe_debootstrap || missing+=(debootstrap)
if [ "$set_" = rootfs ]; then
  ((${#missing[@]} == 0)) && exit 0
  if [ "$(id -u)" -ne 0 ] || ! is_debian; then
    exit 0 # the run set says what to install
  fi
  log "installing debootstrap"
  export DEBIAN_FRONTEND=noninteractive
  apt_update
  apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
  probe_debootstrap || die "debootstrap installed but does not run"
  exit 0
fi
probe_mvn || missing+=(maven)
if [ "$set_" = test ]; then
  probe_chromium || missing+=(chromium)
  probe_faketime || missing+=(libfaketime)
  probe_venv || missing+=(python3 python3-venv)
  probe_javac || missing+=(default-jdk-headless)
fi
# The engine: only when none answers and no dockerd can be started. A docker
# client on PATH does not count (docker.io brings its own client too).
if ! engine_answers && ! dockerd_path >/dev/null; then
  missing+=(docker.io)
fi


if ((${#missing[@]} > 0)); then
  if [ "$(id -u)" -ne 0 ] || ! is_debian; then
    die "missing ${missing[*]}: install them (Debian: apt-get install ${missing[*]}, as root) and run again"
  fi
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt_update
  # No recommends: docker.io's would pull needrestart and apparmor.
  apt-get install -y -qq --no-install-recommends "${missing[@]}" ca-certificates xz-utils >/dev/null
  # A package that installed but still does not run is a broken machine, not
  # a missing package: say which and stop.
  probe_debootstrap || die "debootstrap installed but does not run"
  probe_mvn || die "maven installed but 'mvn -v' fails (is a JDK installed?)"
  if [ "$set_" = test ]; then
    probe_chromium || die "chromium installed but 'chromium --version' fails"
    probe_faketime || die "libfaketime installed but no libfaketimeMT.so.1 under /usr/lib/*/faketime"
    probe_venv || die "python3-venv installed but 'python3 -c \"import venv, ensurepip\"' fails"
    probe_javac || die "default-jdk-headless installed but 'javac -version' fails"
  fi
fi

if ! command -v go >/dev/null 2>&1; then
  die "go not found: install Go $(sed -n 's/^go //p' "$(dirname "$0")/../go.mod") from https://go.dev/dl/ and put it on PATH"
fi

# Docker: an engine must answer.
if ! engine_answers; then
  if [ "$(id -u)" -ne 0 ]; then
    die "no Docker engine answers: start dockerd (as root), or add $(id -un) to the docker group"
  fi
  dockerd=$(dockerd_path) || die "no dockerd to start (docker.io did not install one)"
  if [ -d /run/systemd/system ] && systemctl start docker >/dev/null 2>&1; then
    log "started docker with systemd"
  else
    log "starting $dockerd (log: /var/log/dockerd.log)"
    setsid nohup "$dockerd" >>/var/log/dockerd.log 2>&1 </dev/null &
  fi
  for _ in $(seq 1 60); do
    engine_answers && break
    sleep 1
  done
  engine_answers || die "dockerd did not answer within 60 s; see /var/log/dockerd.log"
fi
browser=
[ "$set_" = test ] && browser=", $(chromium --version 2>/dev/null | head -1)"
log "ok ($set_): docker engine $(docker version --format '{{.Server.Version}}'), $(debootstrap --version 2>/dev/null | head -1 || echo debootstrap), $(mvn -v 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g' | cut -d' ' -f1-3)$browser, $(go version | cut -d' ' -f3)"
