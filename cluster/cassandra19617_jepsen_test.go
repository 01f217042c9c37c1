//go:build jepsen

package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/history"
)

// paxosPurgeGrace is Cassandra's default paxos_purge_grace_period: under
// paxos_state_purging repaired, compaction drops Paxos state older than the
// last Paxos repair's low bound less this grace.
const paxosPurgeGrace = 60 * time.Second

// TestCassandra19617 plays CASSANDRA-19617 (Paxos may re-distribute a stale
// commit that predates a collectable tombstone; 4.1.0 to 4.1.5 under
// paxos_state_purging gc_grace or repaired, fixed in 4.1.6) from outside the
// nodes: CQL and nodetool only, on a 3-node cluster of each release
// LOCKCHECK_19617 names (say 4.1.5,4.1.6; none in make test: 4.1.5 alone
// took a 3-node cluster's turn of about three minutes in its second
// stream, which then ended make test, docs/measurements.md).
//
// The schedule follows the fixing commit's test (CasWriteTest
// testStaleCommitInSystemPaxos), with operator tools where that test
// reaches into the node: an LWT inserts a row and n3 flushes its Paxos
// state (the insert's commit in an SSTable of its own); an LWT deletes the
// row; a Paxos repair once the purge grace has passed; n3 compacts only the
// SSTables flushed since (nodetool compact --user-defined: the test moves
// the insert's SSTable to a higher LCS level instead), which purges the
// delete's commit and leaves the insert's; n1 and n2 compact all their
// Paxos state away; every node compacts the table, whose tombstone is past
// gc_grace_seconds. With n2 down, an LWT through n1 and n3 finds n3's
// stale commit newer than n1's nothing: 4.1.5 re-distributes it (the
// deleted row comes back), 4.1.6 drops it as older than the repair's low
// bound. The ticket rows (scenario/ticket_rows.go, `lockcheck matrix
// --rows '^c19617-'`) deal the same steps as a run's schedule
// (maintenance, client-hold, kill) on the register's clients; this test
// keeps the scripted form and its controls.
func TestCassandra19617(t *testing.T) {
	names := os.Getenv("LOCKCHECK_19617")
	if names == "" {
		t.Skip("set LOCKCHECK_19617=4.1.5,4.1.6 (or any of " + strings.Join(slices.Sorted(maps.Keys(cases19617)), ", ") + ") to play CASSANDRA-19617 on clusters of those releases")
	}
	for _, name := range strings.Split(names, ",") {
		cs, ok := cases19617[name]
		if !ok {
			t.Fatalf("LOCKCHECK_19617: no case %q (want %s)", name, strings.Join(slices.Sorted(maps.Keys(cases19617)), ", "))
		}
		t.Run(name, func(t *testing.T) {
			back, ops, err := play19617(t, name, cs)
			if err != nil {
				t.Fatal(err)
			}
			// The verdict lockcheck's register check gives the client's
			// view: a row read back after its applied delete, no write
			// since, is not linearizable.
			res, err := checker.Check(context.Background(), ops)
			if err != nil {
				t.Fatal(err)
			}
			want := map[bool]checker.Verdict{true: checker.Invalid, false: checker.Valid}[cs.back]
			t.Logf("register check: %s, %d anomalies", res.Verdict, len(res.Anomalies))
			if res.Verdict != want {
				t.Errorf("register check %s, want %s (anomalies %v)", res.Verdict, want, res.Anomalies)
			}
			t.Logf("Cassandra %s, paxos_state_purging %s, Paxos cache %t: the deleted row came back on %d of %d keys", cs.release, cs.purging, cs.cache, back, keys19617)
			// The bug's bar is the known-unsafe rows': at least 9 of 10.
			if cs.back && back < keys19617-1 || !cs.back && back != 0 {
				t.Errorf("deleted row back on %d of %d keys, want %s", back, keys19617, map[bool]string{true: "at least 9", false: "none"}[cs.back])
			}
		})
	}
}

// case19617 is a cluster the schedule is played on, and whether the
// deleted row comes back there.
type case19617 struct {
	release, purging string
	cache            bool // paxos_cache_size left at its default
	back             bool
}

// cases19617: the buggy release and the fixed one, and the controls that
// say which conditions the bug needs.
var cases19617 = map[string]case19617{
	"4.1.5": {release: "4.1.5", purging: "repaired", back: true},
	"4.1.6": {release: "4.1.6", purging: "repaired", back: false},
	// legacy purging writes Paxos state with a TTL and never purges it in
	// compaction: the delete's commit outlives the insert's.
	"4.1.5-legacy": {release: "4.1.5", purging: "legacy", back: false},
	// With the Paxos cache n3 answers from the state it cached at the
	// delete, whatever compaction did to its disk.
	"4.1.5-cache": {release: "4.1.5", purging: "repaired", cache: true, back: false},
}

// keys19617 are the keys the schedule plays on at once, each inserted,
// deleted and checked on its own: ten outcomes of one schedule.
const keys19617 = 10

// play19617 plays the schedule on a new cluster of the case and says on
// how many keys the deleted row came back, and what the client saw as a
// register history.
func play19617(t *testing.T, name string, cs case19617) (int, []history.Op, error) {
	opts := []cluster.Option{cluster.WithNodes(3), cluster.WithVersion(cs.release), cluster.WithPaxos("v2"), cluster.WithPaxosStatePurging(cs.purging)}
	if !cs.cache {
		opts = append(opts, cluster.WithoutPaxosCache())
	}
	c := clustertest.Start(t, "c19617-"+strings.NewReplacer(".", "", "-legacy", "l", "-cache", "c").Replace(name), opts...)
	ctx := ctxFor(t, 12*time.Minute)
	n1, _ := c.Node("n1")
	n2, _ := c.Node("n2")
	n3, _ := c.Node("n3")
	nodetool := func(n *cluster.Node, args ...string) string {
		t.Helper()
		out, err := n.Nodetool(ctx, args...)
		if err != nil {
			t.Fatalf("%s: nodetool %s: %v", n.Name, strings.Join(args, " "), err)
		}
		return out
	}
	paxosFiles := func(n *cluster.Node) []string {
		t.Helper()
		out, err := n.Exec(ctx, "sh", "-c", "ls /var/lib/cassandra/data/system/paxos-*/*-Data.db 2>/dev/null || true")
		if err != nil {
			t.Fatalf("%s: list system.paxos: %v", n.Name, err)
		}
		return strings.Fields(out)
	}
	s, err := c.PinnedSession(ctx, n1)
	if err != nil {
		return 0, nil, err
	}
	defer s.Close()
	ks := c.Keyspace()
	table := ks + ".c19617"
	if err := s.Query(`CREATE TABLE IF NOT EXISTS ` + table + ` (k int PRIMARY KEY, v int) WITH gc_grace_seconds = 5`).ExecContext(ctx); err != nil {
		return 0, nil, err
	}
	// n3 keeps its Paxos SSTables apart until told which to compact.
	nodetool(n3, "disableautocompaction", "system", "paxos")
	// The client's view goes to a history, as a register run's would:
	// the checker judges it (reg-insert, reg-delete, reg-cas, reg-read).
	var ops []history.Op
	begin := time.Now()
	proc := 0 // one client; a new process after an unknown outcome, as the workload's
	rec := func(typ history.Type, f string, k int, v history.RegValue) {
		b, _ := json.Marshal(v)
		ops = append(ops, history.Op{Index: int64(len(ops)), Time: int64(time.Since(begin)), Process: proc, Type: typ, F: f, Key: strconv.Itoa(k), Value: b})
		if typ == history.Info {
			proc++
		}
	}
	one, two := json.RawMessage("1"), json.RawMessage("2")
	lwt := func(f string, k int, v history.RegValue, stmt string, args ...any) bool {
		t.Helper()
		rec(history.Invoke, f, k, v)
		// ALL: every replica has the commit (the commit's consistency).
		applied, err := s.Query(stmt, args...).Consistency(gocql.All).SerialConsistency(gocql.Serial).MapScanCASContext(ctx, map[string]any{})
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		if applied {
			rec(history.OK, f, k, v)
		}
		return applied
	}
	for k := 1; k <= keys19617; k++ {
		if !lwt(history.FRegInsert, k, history.RegValue{New: one}, `INSERT INTO `+table+` (k, v) VALUES (?, 1) IF NOT EXISTS`, k) {
			t.Fatalf("key %d: insert not applied on a fresh key", k)
		}
	}
	nodetool(n3, "flush", "system", "paxos")
	kept := paxosFiles(n3)
	if len(kept) == 0 {
		t.Fatal("n3: no system.paxos SSTable after the flush")
	}
	for k := 1; k <= keys19617; k++ {
		if !lwt(history.FRegDelete, k, history.RegValue{Expect: one}, `DELETE FROM `+table+` WHERE k = ? IF v = 1`, k) {
			t.Fatalf("key %d: delete not applied", k)
		}
	}
	deleted := time.Now()
	// The repair's low bound must pass the delete by the purge grace.
	select {
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	case <-time.After(time.Until(deleted.Add(paxosPurgeGrace + 5*time.Second))):
	}
	nodetool(n1, "repair", "--paxos-only", ks, "c19617")
	for _, n := range []*cluster.Node{n1, n2, n3} {
		nodetool(n, "flush")
	}
	var newer []string
	for _, f := range paxosFiles(n3) {
		if !slices.Contains(kept, f) {
			newer = append(newer, f)
		}
	}
	if len(newer) == 0 {
		t.Fatal("n3: no system.paxos SSTable flushed after the delete")
	}
	nodetool(n3, append([]string{"compact", "--user-defined"}, newer...)...)
	for _, n := range []*cluster.Node{n1, n2} {
		nodetool(n, "compact", "system", "paxos")
	}
	for _, n := range []*cluster.Node{n1, n2, n3} {
		nodetool(n, "compact", ks, "c19617")
	}
	t.Logf("n3 kept %v, compacted %v", kept, newer)

	if err := n2.Kill(ctx); err != nil {
		return 0, nil, err
	}
	// The first round may time out while n1 learns n2 is down: again,
	// a bounded number of times (an unknown outcome is still an outcome of
	// this one update, which only ever writes v = 2).
	back := 0
	for k := 1; k <= keys19617; k++ {
		cas := history.RegValue{Expect: one, New: two}
		rec(history.Invoke, history.FRegCAS, k, cas)
		var applied bool
		var err error
		row := map[string]any{}
		for try := 0; ; try++ {
			clear(row)
			applied, err = s.Query(`UPDATE `+table+` SET v = 2 WHERE k = ? IF v = 1`, k).SerialConsistency(gocql.Serial).MapScanCASContext(ctx, row)
			if err == nil || try == 10 || !isTimeout(err) {
				break
			}
			// A timeout's outcome is unknown: the history says so, and
			// the next try is an operation of its own.
			rec(history.Info, history.FRegCAS, k, cas)
			t.Logf("key %d: update through n1 and n3: %v", k, err)
			time.Sleep(3 * time.Second)
			rec(history.Invoke, history.FRegCAS, k, cas)
		}
		switch {
		case err != nil:
			return 0, nil, err
		case applied:
			rec(history.OK, history.FRegCAS, k, cas)
		default:
			seen := history.NoRow
			if v, ok := row["v"]; ok && v != nil {
				seen, _ = json.Marshal(v)
			}
			rec(history.Fail, history.FRegCAS, k, history.RegValue{Expect: one, New: two, Seen: seen})
		}
		rec(history.Invoke, history.FRegRead, k, history.RegValue{})
		var v int
		err = s.Query(`SELECT v FROM `+table+` WHERE k = ?`, k).Consistency(gocql.Serial).ScanContext(ctx, &v)
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			rec(history.OK, history.FRegRead, k, history.RegValue{Seen: history.NoRow})
			if applied {
				back++
				t.Logf("key %d: the update found the deleted row (then no row)", k)
			}
		case err != nil:
			return 0, nil, err
		default:
			seen, _ := json.Marshal(v)
			rec(history.OK, history.FRegRead, k, history.RegValue{Seen: seen})
			back++
			t.Logf("key %d: serial read after the delete: v = %d (update applied %t)", k, v, applied)
		}
	}
	return back, ops, nil
}
