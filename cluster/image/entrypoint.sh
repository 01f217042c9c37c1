#!/bin/sh
# Runs one Cassandra node in the foreground. Package cluster copies this file,
# the rendered cassandra.yaml, jvm.options and logback.xml into every node
# before it starts, so a user's own image (--image) needs only a Java its
# Cassandra runs on (11 for 4.x, 17 for 5.0), Cassandra's jars, libfaketime
# and iptables.
#
# The container runs with docker's init as PID 1, and this script execs java,
# so the JVM is init's only child: `kill -STOP` from an exec reaches it (PID 1
# itself ignores signals sent from inside its namespace), and when it dies the
# container stops.
#
# libfaketime is preloaded into the JVM only (not into the shell, nor into
# nodetool or anything exec'd later): writing "+30s" into $FAKETIME_FILE moves
# the node's wall clock at once while monotonic time and sleeps stay real.
#
# With LOCKCHECK_SSH_AUTHORIZED_KEY set (cluster.WithSSHKey), the node is also
# reachable as a host over SSH, as a user's own cluster is: sshd starts with
# that key for root, and this script stays the container's process while the
# JVM runs as a detached child, so that a JVM killed over SSH leaves the
# container up and `entrypoint.sh start` (the start command lockcheck's SSH
# nodes are given) starts it again.
#
# With LOCKCHECK_LAZYFS set (cluster.WithLazyFS: the path of the
# lockcheck-lazyfs binary), /var/lib/cassandra is that lazy filesystem over
# /var/lib/cassandra.disk: what Cassandra writes and has not fsynced lives in
# its memory. This script stays the container's process with the filesystem
# and the JVM as its children. When the JVM ends (kill -9 of the JVM alone
# is a process crash: the page cache survives it) the filesystem writes out
# everything it holds and unmounts before the container stops. A power loss
# is the container killed at once: the filesystem dies with its memory.
set -eu

CONF=${LOCKCHECK_CONF:-/etc/lockcheck}
HEAP=${LOCKCHECK_HEAP:-512M}
FAKETIME_FILE=$CONF/faketime

fail() { echo "lockcheck entrypoint: $*" >&2; exit 78; }

# faketime_mono prints the monotonic-clock settings the libfaketime at $1
# is given: FAKETIME_DONT_FAKE_MONOTONIC and FAKETIME_FORCE_MONOTONIC_FIX=0
# when the library knows FORCE_MONOTONIC_FIX (0.9.9 and later: the 5.0 and
# 6.0 images' 0.9.10), nothing for 0.9.8 (bullseye: the 4.x images), where
# DONT_FAKE_MONOTONIC makes its pthread_cond_timedwait wrapper return at
# once and every JVM thread with a timed wait spins (three idle 4.1 nodes
# took the machine's 2 cores, and 8 to 11 minutes to start). 0.9.8 needs
# neither: Java 11 reads the monotonic clock through a clock_gettime it
# looked up in librt itself, which the preload does not reach
# (System.nanoTime stayed real with the wall clock +3600 s, measured). The
# variable's name in the library tells the versions apart.
faketime_mono() {
  if grep -q FAKETIME_FORCE_MONOTONIC_FIX "$1"; then
    echo "FAKETIME_DONT_FAKE_MONOTONIC=1 FAKETIME_FORCE_MONOTONIC_FIX=0"
  fi
}

# `entrypoint.sh faketime-mono LIB` prints that decision alone, so that it
# is tested without an image (cluster's TestEntrypointFaketimeMono).
if [ "${1:-}" = faketime-mono ]; then
  [ $# -eq 2 ] || fail "usage: entrypoint.sh faketime-mono LIBFAKETIME"
  faketime_mono "$2"
  exit 0
fi

LIB=${LOCKCHECK_LIB:-}
if [ -z "$LIB" ]; then
  for d in /opt/lockcheck/lib /opt/cassandra/lib /usr/share/cassandra/lib; do
    for j in "$d"/apache-cassandra-*.jar "$d"/cassandra-all-*.jar; do
      if [ -f "$j" ]; then LIB=$d; break 2; fi
    done
  done
fi
[ -n "$LIB" ] || fail "no Cassandra jars found (looked in /opt/lockcheck/lib, /opt/cassandra/lib, /usr/share/cassandra/lib)"

FAKETIME_SO=
for f in /usr/lib/*/faketime/libfaketimeMT.so.1 /usr/lib/faketime/libfaketimeMT.so.1 /usr/local/lib/faketime/libfaketimeMT.so.1; do
  if [ -f "$f" ]; then FAKETIME_SO=$f; break; fi
done
[ -n "$FAKETIME_SO" ] || fail "libfaketimeMT.so.1 not found: the image needs libfaketime"
# The monotonic clock stays real (faketime_mono above).
FAKETIME_MONO=$(faketime_mono "$FAKETIME_SO")
command -v iptables >/dev/null 2>&1 || fail "iptables not found: the image needs iptables"
command -v java >/dev/null 2>&1 || fail "java not found on PATH: the image needs Java (11 for Cassandra 4.x, 17 for 5.0)"

JAMM=$(ls "$LIB"/jamm-*.jar 2>/dev/null | head -n 1)
[ -n "$JAMM" ] || fail "jamm agent jar not found in $LIB"

if [ "${1:-}" = start ]; then
  # Over SSH: start the JVM detached, with the container's environment.
  [ -f "$CONF/ssh.env" ] && . "$CONF/ssh.env"
  setsid "$0" jvm </dev/null >>/var/log/cassandra/stdout.log 2>&1 &
  exit 0
fi
if [ "${1:-}" != jvm ] && [ -n "${LOCKCHECK_SSH_AUTHORIZED_KEY:-}" ]; then
  command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || fail "sshd not found: the image needs openssh-server for SSH access"
  mkdir -p /root/.ssh /run/sshd /var/log/cassandra
  chmod 700 /root/.ssh
  printf '%s\n' "$LOCKCHECK_SSH_AUTHORIZED_KEY" > /root/.ssh/authorized_keys
  chmod 600 /root/.ssh/authorized_keys
  ssh-keygen -A >/dev/null
  printf 'export LOCKCHECK_HEAP=%s LOCKCHECK_CONF=%s\n' "$HEAP" "$CONF" > "$CONF/ssh.env"
  /usr/sbin/sshd -e
  "$0" start
  # Stay up whatever the JVM does; docker's init reaps the JVM.
  trap 'kill -TERM "$(cat /run/cassandra.pid)" 2>/dev/null; exit 0' TERM INT
  while :; do sleep 3600 & wait $!; done
fi

if [ "${1:-}" != jvm ] && [ -n "${LOCKCHECK_LAZYFS:-}" ]; then
  [ -x "$LOCKCHECK_LAZYFS" ] || fail "lazy filesystem binary $LOCKCHECK_LAZYFS not found"
  [ -c /dev/fuse ] || fail "/dev/fuse missing: a lazy filesystem node needs the device and CAP_SYS_ADMIN"
  DATA=/var/lib/cassandra
  mkdir -p "$DATA" "$DATA.disk" /var/log/cassandra
  STATUS=${LOCKCHECK_LAZYFS_STATUS:-/run/lockcheck-lazyfs.status}
  rm -f "$STATUS"
  "$LOCKCHECK_LAZYFS" --backing "$DATA.disk" --mount "$DATA" --status "$STATUS" 2>>/var/log/cassandra/lazyfs.log &
  FS=$!
  i=0
  until grep -q " $DATA fuse" /proc/mounts; do
    kill -0 "$FS" 2>/dev/null || fail "lazy filesystem exited: $(tail -n 1 /var/log/cassandra/lazyfs.log)"
    i=$((i + 1))
    [ "$i" -le 200 ] || fail "lazy filesystem not mounted on $DATA after 20 s"
    sleep 0.1
  done
  "$0" jvm &
  JVM=$!
  trap 'kill -TERM "$JVM" 2>/dev/null' TERM INT
  rc=0
  while kill -0 "$JVM" 2>/dev/null; do
    wait "$JVM" && rc=0 || rc=$?
  done
  kill -TERM "$FS" 2>/dev/null
  wait "$FS" || echo "lockcheck entrypoint: lazy filesystem exited $?" >&2
  exit "$rc"
fi

[ -f "$FAKETIME_FILE" ] || echo '+0s' > "$FAKETIME_FILE"
# A node that joins the ring anew (it left it, or it takes a dead node's
# place) starts from empty data: package cluster leaves this marker.
if [ -f "$CONF/wipe" ]; then
  rm -rf /var/lib/cassandra/data /var/lib/cassandra/commitlog /var/lib/cassandra/saved_caches /var/lib/cassandra/hints
  rm -f "$CONF/wipe"
fi
mkdir -p /var/lib/cassandra /var/log/cassandra "$CONF/triggers"
# nodetool finds the jars here.
echo "$LIB" > "$CONF/lib.path"

# The configuration directory is on the classpath (as Cassandra's conf/ is):
# GossipingPropertyFileSnitch reads cassandra-rackdc.properties from there.
# node.options, when package cluster writes one, holds flags of this node
# alone (a replacing node's -Dcassandra.replace_address_first_boot).
NODE_OPTS=
[ -f "$CONF/node.options" ] && NODE_OPTS=$(grep -E '^-' "$CONF/node.options" || true)

# The pid file lets Node.SignalJVM find the JVM; exec keeps this pid.
echo $$ > /run/cassandra.pid

# Options files hold one flag a line; comments and blank lines are skipped.
# shellcheck disable=SC2046,SC2086
exec env \
  LD_PRELOAD="$FAKETIME_SO" \
  FAKETIME_TIMESTAMP_FILE="$FAKETIME_FILE" \
  FAKETIME_NO_CACHE=1 \
  $FAKETIME_MONO \
  java \
  $(grep -E '^-' "$CONF/jvm.options") $NODE_OPTS \
  "-Xms$HEAP" "-Xmx$HEAP" \
  "-javaagent:$JAMM" \
  "-Dcassandra.config=file://$CONF/cassandra.yaml" \
  "-Dlogback.configurationFile=file://$CONF/logback.xml" \
  -Dcassandra-foreground=yes \
  -Dcassandra.storagedir=/var/lib/cassandra \
  -Dcassandra.logdir=/var/log/cassandra \
  "-Dcassandra.triggers_dir=$CONF/triggers" \
  -cp "$CONF:$LIB/*" \
  org.apache.cassandra.service.CassandraDaemon
