//go:build jepsen

package cluster_test

import (
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
)

// versionsUnderTest are the release lines TestVersions starts: every line
// but the shared cluster's under LOCKCHECK_FULL=1, or the comma list
// LOCKCHECK_VERSIONS names; none in make test, whose 20 minutes a 4.x
// node's start beside the other stream (up to 4 min here) does not fit.
func versionsUnderTest() []string {
	if v := os.Getenv("LOCKCHECK_VERSIONS"); v != "" {
		return strings.Split(v, ",")
	}
	if os.Getenv("LOCKCHECK_FULL") == "1" {
		return slices.DeleteFunc(cluster.Versions(), func(v string) bool { return v == cluster.DefaultVersion })
	}
	return nil
}

// TestVersions starts a one-node cluster of each release line on its own
// image and checks what the faults and recipes stand on: the release the
// node reports, a lightweight transaction's applied and not-applied answers
// under the line's newest Paxos, and a libfaketime clock offset the JVM sees
// (bullseye's libfaketime is older than bookworm's).
func TestVersions(t *testing.T) {
	if len(versionsUnderTest()) == 0 {
		t.Skip("set LOCKCHECK_FULL=1 or LOCKCHECK_VERSIONS=4.1 to start the other release lines")
	}
	for _, name := range versionsUnderTest() {
		t.Run(name, func(t *testing.T) {
			v, err := cluster.LookupVersion(name)
			if err != nil {
				t.Fatal(err)
			}
			paxos := v.Paxos[len(v.Paxos)-1]
			c := clustertest.Start(t, "v"+strings.NewReplacer(".", "", "-alpha", "a").Replace(name),
				cluster.WithNodes(1), cluster.WithVersion(name), cluster.WithPaxos(paxos))
			ctx := ctxFor(t, 6*time.Minute)
			if got := c.Version().Cassandra; got != v.Cassandra {
				t.Errorf("Version() = %s, want %s", got, v.Cassandra)
			}
			// Status gives each node 10 s to say its version; a 4.x node
			// just up on a loaded machine may take longer (make test's
			// rehearsal, 2026-11-24): ask again, for up to 2 minutes.
			var st []cluster.NodeStatus
			for deadline := time.Now().Add(2 * time.Minute); ; {
				var err error
				if st, err = c.Status(ctx); err != nil {
					t.Fatal(err)
				}
				if len(st) != 1 || st[0].Version != "" || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Second)
			}
			if len(st) != 1 || st[0].State != "UN" || st[0].Version != v.Cassandra {
				t.Fatalf("status %+v, want one UN node of %s", st, v.Cassandra)
			}

			s, err := c.Session(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ks := c.Keyspace()
			if err := s.Query(`CREATE TABLE IF NOT EXISTS ` + ks + `.versions (k text PRIMARY KEY, v int)`).ExecContext(ctx); err != nil {
				t.Fatal(err)
			}
			// A node just started on a loaded machine may time out its first
			// Paxos rounds: wait (bounded) for a serial read to answer
			// before the checks, whose outcomes must be known.
			warm := time.Now().Add(90 * time.Second)
			for {
				var v int
				err := s.Query(`SELECT v FROM `+ks+`.versions WHERE k = ?`, "warm").Consistency(gocql.Serial).ScanContext(ctx, &v)
				if err == nil || errors.Is(err, gocql.ErrNotFound) {
					break
				}
				if time.Now().After(warm) {
					t.Fatalf("no serial read answered in 90 s: %v", err)
				}
				t.Logf("serial read before the checks: %v", err)
				time.Sleep(2 * time.Second)
			}
			// The four answers of a conditional write, on a fresh key: a
			// timeout (an LWT at load takes a second or more here) leaves an
			// outcome unknown, so the sequence starts again on a new key.
			ins := `INSERT INTO ` + ks + `.versions (k, v) VALUES (?, ?) IF NOT EXISTS`
			upd := `UPDATE ` + ks + `.versions SET v = ? WHERE k = ? IF v = ?`
			steps := []struct {
				stmt    string
				args    func(k string) []any
				applied bool
			}{
				{ins, func(k string) []any { return []any{k, 1} }, true},
				{ins, func(k string) []any { return []any{k, 2} }, false},
				{upd, func(k string) []any { return []any{3, k, 1} }, true},
				{upd, func(k string) []any { return []any{4, k, 1} }, false},
			}
			known := false
			for try := 0; try < 5 && !known; try++ {
				k := fmt.Sprintf("k%d", try)
				known = true
				for i, st := range steps {
					applied, err := s.Query(st.stmt, st.args(k)...).SerialConsistency(gocql.Serial).MapScanCASContext(ctx, map[string]any{})
					if isTimeout(err) {
						t.Logf("try %d step %d: %v (outcome unknown: again on a new key)", try, i, err)
						known = false
						break
					}
					if err != nil {
						t.Fatalf("step %d %s: %v", i, st.stmt, err)
					}
					if applied != st.applied {
						t.Fatalf("step %d %s %v: applied %t, want %t", i, st.stmt, st.args(k), applied, st.applied)
					}
				}
			}
			if !known {
				t.Fatal("five tries of the conditional writes ended in timeouts")
			}

			n, _ := c.Node("n1")
			defer n.SetClockOffset(ctx, 0)
			checkJVMOffset(t, ctx, n, 5*time.Second)
		})
	}
}
