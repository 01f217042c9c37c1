//go:build jepsen

package runner_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/matrix"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenario"
)

// TestConfigs runs the rows whose cluster configuration is not the shared
// cluster's (Paxos v2; the lazy filesystem with the commitlog periodic or
// batch) on a cluster of their own per configuration, named by its key.
// LOCKCHECK_REPEAT=N runs every row N times (a known-unsafe row must be
// caught in 9 of 10, a safe one valid every time); LOCKCHECK_CONFIGS=v2,batch
// runs only those configurations; LOCKCHECK_ROWS picks rows by name.
func TestConfigs(t *testing.T) {
	n := max(repeat(t), 1)
	only := os.Getenv("LOCKCHECK_CONFIGS")
	pick := picked()
	store := matrixStore(t)
	for _, g := range scenario.Groups(scenario.Rows) {
		key := g.Cluster.Key()
		if g.Cluster.Shared() || (only != "" && !slices.Contains(strings.Split(only, ","), key)) {
			continue
		}
		rows := slices.DeleteFunc(slices.Clone(g.Rows), func(r scenario.Row) bool { return pick != nil && !pick(r.Name) })
		t.Run(key, func(t *testing.T) {
			// A cluster starts only for rows that will run.
			if !slices.ContainsFunc(rows, func(r scenario.Row) bool {
				return r.Tier == scenario.Quick || os.Getenv("LOCKCHECK_FULL") == "1" || pick != nil
			}) {
				t.Skip("no row of this configuration runs (full tier: set LOCKCHECK_FULL=1)")
			}
			var lazyFS string
			if g.Cluster.LazyFS {
				lazyFS = clustertest.LazyFSBinary(t)
			}
			opts, err := matrix.ClusterOptions(g.Cluster, lazyFS)
			if err != nil {
				t.Fatal(err)
			}
			env := runner.ClusterEnv{clustertest.Start(t, key, opts...)}
			for _, row := range rows {
				t.Run(strings.TrimPrefix(row.Name, key+"/"), func(t *testing.T) {
					skipFull(t, row)
					if n == 1 {
						judgeOnce(t, env, store, row)
						return
					}
					var tally scenario.Tally
					for r := range n {
						runRow(t, env, store, row, r, &tally)
					}
					t.Logf("CONFIG %s %s: %d of %d invalid at %v", key, row.Name, tally.Invalid, n, row.Time)
					if !tally.Met(row) {
						t.Errorf("%s on %s: %d of %d runs invalid, %d valid, %d unknown; want %s", row.Name, g.Cluster, tally.Invalid, n, tally.Valid, tally.Unknown, row.Expected())
					}
				})
			}
		})
	}
}
