package runner

import (
	"fmt"
	"sync"
)

// What runs of one process that share a cluster at once need (make test's
// TestMatrix, client-fault tests side by side).
//
// Runs of one process may share a cluster at once when nothing they deal
// reaches a node (make test's TestMatrix runs such rows in parallel). Their
// set-ups create tables with CREATE TABLE IF NOT EXISTS, and recipes share
// tables (the lease package's recipes one schema, every CQL recipe the
// resource's table): two creations of one table at once, through two
// coordinators, can leave the schema with two table ids for one name. So
// the set-ups of one process take turns; the runs themselves overlap.
var setupMu sync.Mutex

// runIDs are the run IDs (Test.runID) this process has given out. Two runs
// of one name started in the same second, each in a store of its own (tests
// side by side), have run directories of one name: their lock names, and
// the resource's keys, would be one and the runs would contend on them.
var runIDs sync.Map

// uniqueRunID is base, or base.2, base.3, ... when this process gave it out
// already.
func uniqueRunID(base string) string {
	id := base
	for n := 2; ; n++ {
		if _, taken := runIDs.LoadOrStore(id, true); !taken {
			return id
		}
		id = fmt.Sprintf("%s.%d", base, n)
	}
}
