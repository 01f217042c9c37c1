package runner

import "sync"

// Runs of one process may share a cluster at once when nothing they deal
// reaches a node (make test's TestMatrix runs such rows in parallel). Their
// set-ups create tables with CREATE TABLE IF NOT EXISTS, and recipes share
// tables (the lease package's recipes one schema, every CQL recipe the
// resource's table): two creations of one table at once, through two
// coordinators, can leave the schema with two table ids for one name. So
// the set-ups of one process take turns; the runs themselves overlap.
var setupMu sync.Mutex
