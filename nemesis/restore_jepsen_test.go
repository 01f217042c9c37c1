//go:build jepsen

package nemesis_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
)

// restore really puts the old data back: a row written at ALL after the
// window's snapshot (acknowledged by every replica, the restored node
// included: no hint brings it back) is in none of the restored node's
// SSTables, an older row is back at its old value there, and reads at
// ALL through it repair it (blocking read repair); the heal clears the
// snapshot. What the node holds is read from its own SSTables after a
// flush (nodetool getsstables, and the SSTables' rows dumped by
// Cassandra's SSTableExport inside the node), not by reads at ONE, which
// the dynamic snitch may send to another replica under load.
//
// Full tier (LOCKCHECK_FULL=1): it takes about 80 s of make test's shared
// stream, the longer of its two, whose length decides whether make test
// meets its 15-minute budget (docs/measurements.md#make-test).
func TestRestoreBringsTheOldDataBack(t *testing.T) {
	if os.Getenv("LOCKCHECK_FULL") != "1" {
		t.Skip("full tier: set LOCKCHECK_FULL=1 (about 80 s on the shared cluster)")
	}
	c := clustertest.Get(t)
	ts := targetsOf(c)
	if len(ts) < 2 {
		t.Skip("needs a cluster of 2 nodes or more (a replica to repair from)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	s, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Query(`CREATE TABLE IF NOT EXISTS restore_probe (k text PRIMARY KEY, v int)`).ExecContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.AwaitSchemaAgreement(ctx); err != nil {
		t.Fatal(err)
	}
	run := fmt.Sprint(time.Now().UnixNano())
	before, after := "before-"+run, "after-"+run
	write := func(k string, v int) {
		t.Helper()
		if err := s.Query(`INSERT INTO restore_probe (k, v) VALUES (?, ?)`, k, v).Consistency(gocql.All).ExecContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	write(before, 1)

	rec := &nemesis.MemRec{}
	nem, err := nemesis.New(ts, rec, nemesis.WithKinds(nemesis.Restore), nemesis.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	stop, err := nemesis.StartKind(ctx, nem, 0)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stop(context.Background())
		}
		if err := nem.Heal(context.Background()); err != nil {
			t.Errorf("heal: %v", err)
		}
	})
	start := rec.All()[0]
	var sv nemesis.RestoreStart
	if err := json.Unmarshal(start.Value, &sv); err != nil {
		t.Fatal(err)
	}
	var node *cluster.Node
	for _, n := range c.Nodes() {
		if n.Name == start.Node {
			node = n
		}
	}
	if node == nil {
		t.Fatalf("start line on %q, which the cluster does not have", start.Node)
	}
	// The snapshot holds the Paxos tables too.
	out, err := node.Exec(ctx, "sh", "-c", "ls -d /var/lib/cassandra/data/system/paxos-*/snapshots/"+sv.Snapshot)
	if err != nil || strings.TrimSpace(out) == "" {
		t.Fatalf("no snapshot %s of system.paxos on %s: %v %s", sv.Snapshot, node.Name, err, out)
	}

	// Written after the snapshot, acknowledged by every replica.
	write(after, 2)
	write(before, 3)
	if err := stop(ctx); err != nil {
		t.Fatal(err)
	}
	stopped = true
	ops := rec.All()
	var stv nemesis.RestoreStop
	if len(ops) != 2 || ops[1].F != history.StopF(nemesis.Restore) || json.Unmarshal(ops[1].Value, &stv) != nil || stv.Tables == 0 {
		t.Fatalf("lines %+v", ops)
	}
	t.Logf("%s restored from %s: %s", node.Name, sv.Snapshot, ops[1].Value)

	// The node's own replica: its memtable flushed, the SSTables that
	// hold a key and the key's value in them.
	ks := c.Keyspace()
	onNode := func(k string) []int {
		t.Helper()
		if err := node.Flush(ctx, "restore_probe"); err != nil {
			t.Fatal(err)
		}
		out, err := node.Nodetool(ctx, "getsstables", ks, "restore_probe", k)
		if err != nil {
			t.Fatalf("getsstables %s on %s: %v", k, node.Name, err)
		}
		var vals []int
		for _, f := range strings.Fields(out) {
			vals = append(vals, dumpValues(ctx, t, node, f, k)...)
		}
		return vals
	}
	if got := onNode(after); len(got) != 0 {
		t.Fatalf("%s after the restore holds the row written after the snapshot (v %v): want it gone", node.Name, got)
	}
	if got := onNode(before); len(got) == 0 || slices.Max(got) != 1 {
		t.Fatalf("%s after the restore holds the older row at %v: want its value at the snapshot, 1", node.Name, got)
	}

	// Reads at ALL through it: every replica answers, they disagree, and
	// the coordinator repairs the node before answering (blocking read
	// repair; at QUORUM the snitch may leave the node out).
	pinned, err := c.PinnedSession(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Close()
	read := func(k string) (int, bool) {
		t.Helper()
		var v int
		err := pinned.Query(`SELECT v FROM restore_probe WHERE k = ?`, k).Consistency(gocql.All).ScanContext(ctx, &v)
		if errors.Is(err, gocql.ErrNotFound) {
			return 0, false
		}
		if err != nil {
			t.Fatalf("read %s at ALL through %s: %v", k, node.Name, err)
		}
		return v, true
	}
	if v, ok := read(after); !ok || v != 2 {
		t.Fatalf("read at ALL through %s: %d %v, want 2: an acknowledged write lost", node.Name, v, ok)
	}
	if v, ok := read(before); !ok || v != 3 {
		t.Fatalf("read at ALL through %s: %d %v, want 3: an acknowledged write lost", node.Name, v, ok)
	}
	if got := onNode(after); !slices.Contains(got, 2) {
		t.Errorf("%s after the read at ALL holds %v for the newer row: want it repaired to 2", node.Name, got)
	}
	if got := onNode(before); !slices.Contains(got, 3) {
		t.Errorf("%s after the read at ALL holds %v for the older row: want it repaired to 3", node.Name, got)
	}

	if err := nem.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	has, err := node.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(has, func(tag string) bool { return strings.HasPrefix(tag, nemesis.RestorePrefix) }) {
		t.Errorf("snapshots after the heal: %v", has)
	}
}

// cellRE finds the v cell of a row in SSTableExport's JSON.
var cellRE = regexp.MustCompile(`"name"\s*:\s*"v",\s*"value"\s*:\s*(-?[0-9]+)`)

// dumpValues are the values of column v that SSTable file holds for key k,
// as Cassandra's SSTableExport (sstabledump) reads it inside the node.
func dumpValues(ctx context.Context, t *testing.T, n *cluster.Node, file, k string) []int {
	t.Helper()
	script := `CONF=${LOCKCHECK_CONF:-/etc/lockcheck}; LIB=$(cat "$CONF/lib.path" 2>/dev/null || echo /opt/lockcheck/lib)
exec java -Xmx128m -XX:+UseSerialGC $(grep -E '^--add-(exports|opens)' "$CONF/jvm.options") \
  -Dcassandra.config="file://$CONF/cassandra.yaml" -Dlogback.configurationFile="file://$CONF/logback-tools.xml" \
  -Dcassandra.logdir=/tmp -cp "$LIB/*" org.apache.cassandra.tools.SSTableExport "$1" -k "$2"`
	out, err := n.Exec(ctx, "sh", "-c", script, "dump", file, k)
	if err != nil {
		t.Fatalf("sstabledump %s on %s: %v", file, n.Name, err)
	}
	var vals []int
	for _, m := range cellRE.FindAllStringSubmatch(out, -1) {
		v, err := strconv.Atoi(m[1])
		if err != nil {
			t.Fatal(err)
		}
		vals = append(vals, v)
	}
	return vals
}
