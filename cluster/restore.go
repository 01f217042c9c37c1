package cluster

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The node actions of the restore fault (nemesis: restore): a snapshot of
// the node's data taken at one moment, and later put back as an operator
// restoring a node from its backup does.

// dataDir is where the node keeps its data (the entrypoint's
// -Dcassandra.storagedir): data/<keyspace>/<table>-<id>, commitlog,
// saved_caches, hints.
const dataDir = "/var/lib/cassandra"

// restoringFile marks a node whose data a restore is swapping: it names
// the snapshot. A harness killed between the JVM's stop and its restart
// leaves it, and the next heal finishes that restore (RestoreSnapshot is
// idempotent) rather than start a node whose tables are half swapped.
const restoringFile = confDir + "/restoring"

var snapshotTagRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// CheckSnapshotTag refuses a tag nodetool would refuse or a shell would
// read as more than a word: it goes into the node's commands.
func CheckSnapshotTag(tag string) error {
	if !snapshotTagRE.MatchString(tag) {
		return fmt.Errorf("snapshot tag %q: want letters, digits, '.', '_' or '-' (at most 100, not starting with a symbol)", tag)
	}
	return nil
}

// Snapshot takes a snapshot of every keyspace of the node under tag
// (`nodetool snapshot -t tag`, which flushes the memtables first): hard
// links of its SSTables in each table's snapshots/tag. Paxos state lives in
// system.paxos and system.paxos_repair_history (4.1 and later), which the
// all-keyspaces snapshot covers (5.0, checked here on every snapshot); a
// release whose all-keyspaces snapshot left them out gets a snapshot of
// keyspace system under the same tag.
func (n *Node) Snapshot(ctx context.Context, tag string) error {
	if err := CheckSnapshotTag(tag); err != nil {
		return fmt.Errorf("snapshot %s: %w", n.Name, err)
	}
	if _, err := n.Nodetool(ctx, "snapshot", "-t", tag); err != nil {
		return fmt.Errorf("snapshot %s: %w", n.Name, err)
	}
	out, err := n.Exec(ctx, "sh", "-c", "ls -d "+dataDir+"/data/system/paxos-*/snapshots/"+tag+" 2>/dev/null || true")
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", n.Name, err)
	}
	if strings.TrimSpace(out) != "" {
		return nil
	}
	if _, err := n.Nodetool(ctx, "snapshot", "-t", tag, "system"); err != nil {
		return fmt.Errorf("snapshot %s: system.paxos: %w", n.Name, err)
	}
	return nil
}

// Snapshots are the tags of the snapshots on the node's disk, sorted: read
// from the data directories rather than nodetool (no JVM to start, and a
// stopped JVM can still be asked).
func (n *Node) Snapshots(ctx context.Context) ([]string, error) {
	out, err := n.Exec(ctx, "sh", "-c", "ls -d "+dataDir+"/data/*/*/snapshots/* 2>/dev/null || true")
	if err != nil {
		return nil, fmt.Errorf("snapshots %s: %w", n.Name, err)
	}
	var tags []string
	for l := range strings.Lines(out) {
		l = strings.TrimSpace(l)
		if i := strings.LastIndex(l, "/snapshots/"); i >= 0 {
			if t := l[i+len("/snapshots/"):]; t != "" && !slices.Contains(tags, t) {
				tags = append(tags, t)
			}
		}
	}
	slices.Sort(tags)
	return tags, nil
}

// ClearSnapshot removes the snapshot tag from every table of the node
// (`nodetool clearsnapshot -t tag`).
func (n *Node) ClearSnapshot(ctx context.Context, tag string) error {
	if err := CheckSnapshotTag(tag); err != nil {
		return fmt.Errorf("clear snapshot %s: %w", n.Name, err)
	}
	if _, err := n.Nodetool(ctx, "clearsnapshot", "-t", tag); err != nil {
		return fmt.Errorf("clear snapshot %s: %w", n.Name, err)
	}
	return nil
}

// restoreScript puts snapshot $1 back into the node's data directories
// while its JVM is stopped (SIGSTOP: it writes nothing meanwhile, and is
// killed, never resumed, afterwards). Restored are the tables of every
// keyspace but Cassandra's own, and of system.paxos and
// system.paxos_repair_history (the node's Paxos promises, accepts and
// commits, and its Paxos repair history): in each such table directory the
// files (SSTable components, transaction logs) are removed and the
// snapshot's SSTable components hard-linked in their place (the snapshot
// itself stays, for the heal to clear). The commitlog segments are removed
// (their replay would bring back the writes the snapshot predates), and
// the saved caches (they describe SSTables that are gone). Kept: the rest
// of system (the node's identity, tokens, peers), system_schema (the
// schema, which the peers would send back anyway), system_auth,
// system_distributed, system_traces, the hints the node holds for its
// peers, and system/_paxos_repair_state (the keys with uncommitted Paxos
// state that 4.1+ tracks: kept, it makes the node repair more keys, never
// fewer). It prints "tables N removed N commitlog N". LOCKCHECK_DATA_DIR
// replaces the data directory for its test.
const restoreScript = `set -eu
tag=$1
D=${LOCKCHECK_DATA_DIR:-` + dataDir + `}
tables=0 removed=0 commitlog=0
for t in "$D"/data/*/*-*/; do
  t=${t%/}
  ks=$(basename "$(dirname "$t")")
  name=$(basename "$t")
  name=${name%-*}
  case "$ks" in
  system) case "$name" in paxos|paxos_repair_history) ;; *) continue ;; esac ;;
  system_*) continue ;;
  esac
  snap=$t/snapshots/$tag
  if [ ! -d "$snap" ]; then
    # A table of a restored keyspace the snapshot has no copy of.
    [ "$ks" = system ] && continue
    n=$(find "$t" -maxdepth 1 -type f | wc -l)
    find "$t" -maxdepth 1 -type f -delete
    removed=$((removed + n))
    continue
  fi
  n=$(find "$t" -maxdepth 1 -type f | wc -l)
  find "$t" -maxdepth 1 -type f -delete
  removed=$((removed + n))
  for f in "$snap"/*; do
    [ -f "$f" ] || continue
    case $(basename "$f") in manifest.json|schema.cql) continue ;; esac
    ln "$f" "$t/" 2>/dev/null || cp -p "$f" "$t/"
  done
  tables=$((tables + 1))
done
if [ -d "$D/commitlog" ]; then
  commitlog=$(find "$D/commitlog" -maxdepth 1 -type f | wc -l)
  find "$D/commitlog" -maxdepth 1 -type f -delete
fi
[ -d "$D/saved_caches" ] && find "$D/saved_caches" -maxdepth 1 -type f -delete
echo "tables $tables removed $removed commitlog $commitlog"
`

// RestoreSnapshot restores the node from its snapshot tag as an operator
// restores a node from its backup: Cassandra stops (its JVM frozen at
// once, so that nothing it writes lands after the swap, then killed), the
// snapshot's SSTables replace the restored tables' files and the commitlog
// is removed (restoreScript says exactly what is removed and what kept),
// and the node starts again, serving its data as it was when the snapshot
// was taken until repair, read repair or hints bring it up to date. It
// returns once the node serves CQL, with the tables put back from the
// snapshot, the data files removed (those tables' newer SSTable components
// and transaction logs, and the files of the restored keyspaces' tables the
// snapshot has no copy of) and the commitlog segments removed. A node that
// is down is started first (its snapshot is read from its running
// container). Doing it twice is doing it once: the heal finishes a restore
// a killed harness left.
func (n *Node) RestoreSnapshot(ctx context.Context, tag string) (tables, removed, commitlog int, err error) {
	if err := CheckSnapshotTag(tag); err != nil {
		return 0, 0, 0, fmt.Errorf("restore %s: %w", n.Name, err)
	}
	fail := func(err error) (int, int, int, error) { return 0, 0, 0, fmt.Errorf("restore %s: %w", n.Name, err) }
	if st, err := n.State(ctx); err != nil {
		return fail(err)
	} else if st == "paused" {
		if err := n.Unpause(ctx); err != nil {
			return fail(err)
		}
	} else if st != "running" {
		if err := n.Restart(ctx); err != nil {
			return fail(err)
		}
	}
	has, err := n.Snapshots(ctx)
	if err != nil {
		return fail(err)
	}
	if !slices.Contains(has, tag) {
		// A marker naming it can never be finished: dropped, so that
		// the heal does not fail on it for ever.
		if m, _ := n.Restoring(ctx); m == tag {
			n.Exec(ctx, "rm", "-f", restoringFile)
		}
		return fail(&NoSnapshotError{Node: n.Name, Tag: tag, Has: has})
	}
	if _, err := n.Exec(ctx, "sh", "-c", "printf '%s\\n' '"+tag+"' > "+restoringFile); err != nil {
		return fail(err)
	}
	if err := n.SignalJVM(ctx, "STOP"); err != nil {
		return fail(fmt.Errorf("stop the JVM: %w", err))
	}
	out, err := n.Exec(ctx, "sh", "-c", restoreScript, "restore", tag)
	if err != nil {
		// Whatever the swap did, the JVM must not run on over it: killed
		// and started, the node serves what the disk holds, and the
		// marker has the heal do the swap again.
		bg := context.WithoutCancel(ctx)
		return 0, 0, 0, errors.Join(fmt.Errorf("restore %s: %w", n.Name, err), n.Kill(bg), n.Restart(bg))
	}
	tables, removed, commitlog, err = parseRestored(out)
	if err != nil {
		err = fmt.Errorf("restore %s: %w", n.Name, err)
	}
	if kerr := n.Kill(ctx); kerr != nil {
		return tables, removed, commitlog, errors.Join(err, fmt.Errorf("restore %s: %w", n.Name, kerr))
	}
	if serr := n.Restart(ctx); serr != nil {
		return tables, removed, commitlog, errors.Join(err, fmt.Errorf("restore %s: %w", n.Name, serr))
	}
	if _, rerr := n.Exec(ctx, "rm", "-f", restoringFile); rerr != nil {
		err = errors.Join(err, fmt.Errorf("restore %s: %w", n.Name, rerr))
	}
	return tables, removed, commitlog, err
}

// Restoring is the snapshot a restore left half done on the node (its
// marker), or "".
func (n *Node) Restoring(ctx context.Context) (string, error) {
	out, err := n.Exec(ctx, "sh", "-c", "cat "+restoringFile+" 2>/dev/null || true")
	if err != nil {
		return "", fmt.Errorf("restoring %s: %w", n.Name, err)
	}
	return strings.TrimSpace(out), nil
}

// ReplicatesAll says whether the node holds a replica of every key of the
// cluster's keyspace: its data centre has no more nodes than the
// replication factor there (a snitch's placement aside, which lockcheck's
// clusters do not use).
func (n *Node) ReplicatesAll() bool {
	cfg := n.c.cfg
	rf := cfg.replicationFactor()
	if cfg.dcCount() > 1 {
		return rf == 0 || rf >= cfg.smallestDC()
	}
	return rf >= cfg.nodes
}

// NoSnapshotError is a restore of a snapshot the node does not have.
type NoSnapshotError struct {
	Node, Tag string
	Has       []string
}

func (e *NoSnapshotError) Error() string {
	has := "none"
	if len(e.Has) > 0 {
		has = strings.Join(e.Has, ", ")
	}
	return fmt.Sprintf("node %s has no snapshot %q (it has: %s)", e.Node, e.Tag, has)
}

// parseRestored reads restoreScript's last line.
func parseRestored(out string) (tables, removed, commitlog int, err error) {
	f := strings.Fields(lastLine(out))
	if len(f) != 6 || f[0] != "tables" || f[2] != "removed" || f[4] != "commitlog" {
		return 0, 0, 0, fmt.Errorf("restore script said %q", strings.TrimSpace(out))
	}
	var v [3]int
	for i := range v {
		if v[i], err = strconv.Atoi(f[2*i+1]); err != nil {
			return 0, 0, 0, fmt.Errorf("restore script said %q: %w", strings.TrimSpace(out), err)
		}
	}
	return v[0], v[1], v[2], nil
}
