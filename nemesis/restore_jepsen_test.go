//go:build jepsen

package nemesis_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
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
// included: no hint brings it back) is gone on the restored node when read
// at ONE through it alone, an older row is back to its old value, and
// reads at QUORUM through it repair it (blocking read repair); the heal
// clears the snapshot.
//
// Full tier (LOCKCHECK_FULL=1) until it reads the node's own replica for
// sure: its ONE reads go through the dynamic snitch, which on a loaded
// machine (make test, load 10-20) sent all three to the other replicas, and
// the test failed with the restore done (160 files removed). Reading the
// node's SSTables after a flush (sstabledump) would not depend on the
// snitch.
func TestRestoreBringsTheOldDataBack(t *testing.T) {
	if os.Getenv("LOCKCHECK_FULL") != "1" {
		t.Skip("full tier: set LOCKCHECK_FULL=1 (its ONE reads may be routed to another replica under load)")
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

	pinned, err := c.PinnedSession(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Close()
	read := func(k string, cl gocql.Consistency) (int, bool) {
		t.Helper()
		var v int
		err := pinned.Query(`SELECT v FROM restore_probe WHERE k = ?`, k).Consistency(cl).ScanContext(ctx, &v)
		if errors.Is(err, gocql.ErrNotFound) {
			return 0, false
		}
		if err != nil {
			t.Fatalf("read %s at %v through %s: %v", k, cl, node.Name, err)
		}
		return v, true
	}
	// At ONE the coordinator reads its own replica (the snitch puts it
	// first); a speculative retry may ask another, so the old state need
	// show in one read of three.
	var seen []string
	old := false
	for range 3 {
		_, got := read(after, gocql.One)
		v, _ := read(before, gocql.One)
		seen = append(seen, fmt.Sprintf("after present %v, before %d", got, v))
		old = old || (!got && v == 1)
	}
	if !old {
		t.Fatalf("%s after the restore, at ONE through it alone: %v; want the row written after the snapshot gone and the older row at its old value", node.Name, seen)
	}
	// QUORUM reads through it: the replicas disagree, the coordinator
	// repairs its own before answering.
	if v, ok := read(after, gocql.Quorum); !ok || v != 2 {
		t.Fatalf("read at QUORUM through %s: %d %v, want 2: an acknowledged write lost", node.Name, v, ok)
	}
	read(before, gocql.Quorum)
	repaired := false
	for i := 0; i < 10 && !repaired; i++ {
		v1, ok := read(after, gocql.One)
		v2, _ := read(before, gocql.One)
		repaired = ok && v1 == 2 && v2 == 3
		if !repaired {
			read(after, gocql.All)
			read(before, gocql.All)
		}
	}
	if !repaired {
		t.Fatalf("%s: not repaired by QUORUM and ALL reads", node.Name)
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
