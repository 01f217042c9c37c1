package scenario

import (
	"cmp"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// The axes the exploratory rows are generated from, as etcd's robustness
// tests generate theirs from traffic, failpoints and cluster configurations:
// a row's settings come from the axes its combination names (expect.go says
// which combinations are asserted, with which verdict, and why), so that a
// setting shared by a family is written once. Named regression rows are
// written by hand (regressions.go).

const s = time.Second

// FaultSet is an entry of the fault axis: the kinds a row deals and the
// settings a row under them runs with unless its expectation tunes them.
type FaultSet struct {
	Kinds          []string
	Time, Interval time.Duration
	// Schedule is dealt instead of drawn faults: the membership rows'
	// overlapping windows (a coordinator cut or killed inside a range
	// movement, which the drawn scheduler, one window at a time, never
	// deals). Kinds are then its kinds.
	Schedule *nemesis.Schedule
	// SkewAhead and the skew bounds set client-clock's direction and
	// range (run --skew-ahead, --skew-min, --skew-max).
	SkewAhead        bool
	SkewMin, SkewMax time.Duration
	// Pin pins the clients round-robin to the nodes: an aimed kind
	// (coord-*) finds its node by the clients' coordinators, and a kill in
	// a movement is of a pinned client's coordinator.
	Pin bool
}

// The fault axis. A drawn fault comes every Interval on average; the times
// are the shortest that dealt the set's kinds in full on a loaded machine.
var (
	noFault     = FaultSet{Time: 20 * s, Interval: 3 * s}
	clientPause = FaultSet{Kinds: []string{nemesis.ClientPause}, Time: 20 * s, Interval: 3 * s}
	clientClock = FaultSet{Kinds: []string{nemesis.ClientClock}, Time: 20 * s, Interval: 3 * s}
	// clientClockAhead sets a contender's clock ahead by 4-10 s: past the
	// 3 s lease a contender must outrun, which the default skews (1-30 s,
	// log-uniform) often are not.
	clientClockAhead = FaultSet{Kinds: []string{nemesis.ClientClock}, SkewAhead: true, SkewMin: 4 * s, SkewMax: 10 * s, Time: 20 * s, Interval: 3 * s}
	partitionFault   = FaultSet{Kinds: []string{nemesis.Partition}, Time: 30 * s, Interval: 3 * s}
	killFault        = FaultSet{Kinds: []string{nemesis.Kill}, Time: 30 * s, Interval: 3 * s}
	lossFault        = FaultSet{Kinds: []string{nemesis.Loss}, Time: 30 * s, Interval: 3 * s}
	coordClock       = FaultSet{Kinds: []string{nemesis.CoordClock}, Pin: true, Time: 20 * s, Interval: 3 * s}
	coordPartition   = FaultSet{Kinds: []string{nemesis.CoordPartition}, Pin: true, Time: 20 * s, Interval: 3 * s}
	partitionPause   = FaultSet{Kinds: []string{nemesis.Partition, nemesis.Pause}, Time: 30 * s, Interval: 3 * s}
	// nodeFaults deals every node kind: faults every ~2 s so that a round
	// of every kind, a kill's restart included, fits in the run's time on a
	// loaded machine (a shorter run left kinds undealt).
	nodeFaults    = FaultSet{Kinds: NodeFaults, Time: 90 * s, Interval: 2 * s}
	rackPowerLoss = FaultSet{Kinds: []string{nemesis.RackPowerLoss}, Time: 30 * s, Interval: 4 * s}
	dcPartition   = FaultSet{Kinds: []string{nemesis.DCPartition}, Time: 30 * s, Interval: 5 * s}
	// The membership kinds: a bootstrap streams for tens of seconds, so a
	// window is long and the run longer.
	joinLeave    = FaultSet{Kinds: joinAndLeave, Time: 150 * s, Interval: 10 * s}
	replaceFault = FaultSet{Kinds: []string{nemesis.Replace}, Time: 150 * s, Interval: 10 * s}
	removeFault  = FaultSet{Kinds: []string{nemesis.Remove}, Time: 150 * s, Interval: 10 * s}
	movementCuts = FaultSet{Kinds: membershipCuts.Kinds(), Schedule: &membershipCuts, Pin: true, Time: 150 * s, Interval: 10 * s}
	// movementKills' runs last until the last window has ended (its kills
	// follow the movements): the time is the schedule's end if every
	// movement were instant.
	movementKills = FaultSet{Kinds: membershipKills.Kinds(), Schedule: &membershipKills, Pin: true, Time: 260 * s, Interval: 10 * s}
)

// CatalogueFaults are the fault sets every lock of the catalogue
// (docs/locks.md) is tried under: no fault, a stalled holder, a client's
// clock, a cut, a killed node and a coordinator's clock. A lock's
// expectations cover each of them (TestCatalogueCross).
var CatalogueFaults = []FaultSet{noFault, clientPause, clientClock, partitionFault, killFault, coordClock}

// The Paxos variant axis: paxos_variant values as cluster.Version names
// them (Paxos and Unsafe), "" being v1. The known-unsafe variants switch
// off CASSANDRA-12126's fix: the register's controls.
const (
	PaxosV2            = "v2"
	PaxosV1Unsafe      = "v1_without_linearizable_reads_or_rejected_writes"
	PaxosV1UnsafeReads = "v1_without_linearizable_reads" // 4.0's system property, lockcheck's name for it
)

// The paxos_state_purging axis (4.1 and later; cluster.PaxosStatePurgings):
// "" is the releases' default, legacy (Paxos state written with a TTL);
// gc_grace and repaired purge it in compaction, past the table's
// gc_grace_seconds or once a Paxos repair covered it.
const (
	purgeGCGrace  = "gc_grace"
	purgeRepaired = "repaired"
)

// The cluster axis: shapes (nodes, spares, data centres), Paxos variants,
// commitlog durability and release lines (Releases), each a Cluster; the
// zero Cluster is the shared one (3 nodes, Paxos v1, the node image's
// release). The workload axis is workload.Shapes and the register.
var (
	paxosV2  = Cluster{Paxos: PaxosV2}
	periodic = Cluster{LazyFS: true, Commitlog: "periodic"}
	batch    = Cluster{LazyFS: true, Commitlog: "batch"}
	// Two data centres of two nodes (RF 2 in each), and four nodes (RF 3)
	// with a spare for the membership kinds.
	twoDCs = Cluster{Nodes: 4, DCs: 2}
	// Three nodes and two (RF 3 and 2): the side of three holds a quorum
	// of all five replicas, which 2+2 gives neither side.
	twoDCsUneven = Cluster{Nodes: 5, DCs: 2}
	spare        = Cluster{Nodes: 4, Spares: 1}
	spareV2      = Cluster{Nodes: 4, Spares: 1, Paxos: PaxosV2}
	spareV2Skip  = Cluster{Nodes: 4, Spares: 1, Paxos: PaxosV2, SkipPaxosRepair: true}
	joinAndLeave = []string{nemesis.Join, nemesis.Leave}

	// The release lines' clusters (cluster/versions.go), kept by these
	// names for rows written by hand.
	c40       = Cluster{Version: "4.0"}
	c41       = Cluster{Version: "4.1"}
	c41v2     = Cluster{Version: "4.1", Paxos: PaxosV2}
	unsafe50  = Cluster{Paxos: PaxosV1Unsafe}
	unsafe40r = Cluster{Version: "4.0", Paxos: PaxosV1UnsafeReads}
)

// JavaLock is an entry of the lock axis for a lock of plugins/java-locks
// (its code: a class there and its name in Main's table; its words:
// scenario.Catalogue). Its rows: Expect, which covers CatalogueFaults (a
// row each, the lock implied) and may add combinations, and a quick row
// that deals javaLockStall to two clients.
type JavaLock struct {
	Name string
	// StallSeed is the quick row's seed; Lease names what the stall
	// outlasts, Taken how the next holder gets the lock.
	StallSeed    int64
	Lease, Taken string
	Expect       []Expect
}

// Command is the lock's plug-in command line.
func (j JavaLock) Command() string { return javaCommand + j.Name }

const javaCommand = "plugins/java-locks/run "

// stallRow is the lock's quick row.
func (j JavaLock) stallRow() Row { return javaStallRow(j.Name, j.StallSeed, j.Lease, j.Taken) }

// Release is an entry of the release-line axis: a Cassandra release line
// of cluster/versions.go ("" the node image's) and its rows. Expect's
// clusters take the line's version (their Paxos variant is theirs); a
// QuickSeed gives the line a quick row: lease/client-pause/shrunk's stalls
// on one node of the line, in make test's second stream, so that every
// release's image, start, schema, LWT and TTL are exercised by the tests.
// One node starts in a third of three's time; the node faults need three,
// and those rows are the full tier.
type Release struct {
	Line      string
	QuickSeed int64
	Expect    []Expect
}

// quickRow is the line's quick row.
func (rl Release) quickRow() Row {
	r := Row{
		Recipe: "lease", Faults: []string{nemesis.ClientPause}, Cluster: Cluster{Nodes: 1, Version: rl.Line},
		Time: 16 * s, Interval: 3 * s, Seed: rl.QuickSeed, Schedule: leaseStalls,
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "lease/client-pause/shrunk on Cassandra " + rl.Line + ": a holder stalled past its lease writes over the next holder's adds (stale-holder-write, lost-add).",
	}
	r.Name = r.canonicalName()
	return r
}

// Expect is a line of the expectation table: a combination of the axes
// (lock, fault set, workload, cluster, consistency) and what a row of it
// asserts (verdict, catch rate, tier, mechanism), under a seed of its own.
// Time, Interval, Clients, the skew bounds and RetireStuck tune the
// combination where its axes' settings do not show the flaw (each says
// why beside it); zero: the axes'.
type Expect struct {
	Lock     string // a recipe of the registry, or a JavaLock's name
	Faults   FaultSet
	Workload string // "": workload.ShapeCycle; the register lock implies its workload
	Cluster  Cluster
	DCLocal  bool

	Seed int64
	// Want is checker.Invalid for a known-unsafe combination (caught in at
	// least Catch of 10 runs, 0: 9), checker.Valid for a safe one.
	Want      checker.Verdict
	Catch     int
	Tier      Tier
	Mechanism string
	// Load: a safe combination whose verdict hinges on the machine's load
	// (Row.Load).
	Load *LoadBound

	Time, Interval   time.Duration
	Clients          int
	SkewMin, SkewMax time.Duration
	RetireStuck      bool
}

// Row is the combination's row: its settings from the axes, tuned by the
// expectation; its name from its settings (Row.Check's form).
func (e Expect) Row() Row {
	f := e.Faults
	r := Row{
		Recipe: e.Lock, Command: commandOf(e.Lock), Workload: e.Workload, Faults: slices.Clone(f.Kinds),
		Cluster: e.Cluster, DCLocal: e.DCLocal, Pin: f.Pin, Schedule: f.Schedule,
		Time: cmp.Or(e.Time, f.Time), Interval: cmp.Or(e.Interval, f.Interval), Clients: e.Clients,
		SkewAhead: f.SkewAhead, SkewMin: cmp.Or(e.SkewMin, f.SkewMin), SkewMax: cmp.Or(e.SkewMax, f.SkewMax),
		RetireStuck: e.RetireStuck,
		Seed:        e.Seed, Want: e.Want, Unsafe: e.Want == checker.Invalid, Catch: e.Catch, Tier: e.Tier, Mechanism: e.Mechanism,
		Load: e.Load,
	}
	if e.Lock == workload.ShapeRegister {
		r.Workload = workload.ShapeRegister
	}
	r.Name = r.canonicalName()
	return r
}

// commandOf is a Java lock's plug-in command line, "" for a recipe.
func commandOf(lock string) string {
	if slices.ContainsFunc(JavaLocks, func(j JavaLock) bool { return j.Name == lock }) {
		return javaCommand + lock
	}
	return ""
}

// rowsOf are the expectations' rows, in the table's order.
func rowsOf(es []Expect) []Row {
	out := make([]Row, len(es))
	for i, e := range es {
		out[i] = e.Row()
	}
	return out
}

// cross is the expectations of every combination of faults and clusters
// (faults first), seeded from seed in steps of step: the rows a family's
// axes span, each worded by mechanism.
func cross(lock string, faults []FaultSet, clusters []Cluster, seed, step int64, tier Tier, want checker.Verdict, mechanism func(FaultSet, Cluster) string) []Expect {
	var out []Expect
	for _, f := range faults {
		for _, c := range clusters {
			out = append(out, Expect{Lock: lock, Faults: f, Cluster: c, Seed: seed, Want: want, Tier: tier, Mechanism: mechanism(f, c)})
			seed += step
		}
	}
	return out
}

// bySeed orders a family generated from several axis entries by seed: the
// order its rows were added in, which docs/findings.md keeps.
func bySeed(rows []Row) []Row {
	slices.SortStableFunc(rows, func(a, b Row) int { return cmp.Compare(a.Seed, b.Seed) })
	return rows
}

// membershipCuts deals the join and leave windows of the membership rows
// with a coordinator cut inside each movement, by the clock of a run on
// a lightly loaded machine (a bootstrap streams in 30-60 s, a
// decommission in 15-30 s): the spare n5 bootstraps and decommissions
// with n1 then n3 cut; member n2 decommissions and bootstraps back with
// n3 then n1 cut. A plain step waits for the windows before it, so the
// leave starts when the join ends, and the run goes on until the
// schedule is dealt (DealtInFull): a run cut at the row's time could end
// before its leave or its cuts on a loaded machine.
var membershipCuts = nemesis.Schedule{Source: "issue 22: coordinator cuts inside range movements, by hand", Steps: []nemesis.Step{
	{Kind: nemesis.Join, At: nemesis.Duration(2 * time.Second), For: nemesis.Duration(45 * time.Second), Value: []byte(`{"node":"n5"}`)},
	{Kind: nemesis.CoordPartition, At: nemesis.Duration(10 * time.Second), For: nemesis.Duration(25 * time.Second), Overlap: true, Value: []byte(`{"node":"n1"}`)},
	{Kind: nemesis.CoordPartition, At: nemesis.Duration(45 * time.Second), For: nemesis.Duration(20 * time.Second), Overlap: true, Value: []byte(`{"node":"n3"}`)},
	{Kind: nemesis.Leave, At: nemesis.Duration(70 * time.Second), For: nemesis.Duration(40 * time.Second), Value: []byte(`{"node":"n2"}`)},
	{Kind: nemesis.CoordPartition, At: nemesis.Duration(75 * time.Second), For: nemesis.Duration(25 * time.Second), Overlap: true, Value: []byte(`{"node":"n3"}`)},
	{Kind: nemesis.CoordPartition, At: nemesis.Duration(115 * time.Second), For: nemesis.Duration(30 * time.Second), Overlap: true, Value: []byte(`{"node":"n1"}`)},
}}

// membershipKills deals the join and leave windows with a pinned
// client's coordinator killed (SIGKILL, restarted 8 s later) inside
// each, on a node that is not the one moving. The kills and the leave
// follow the windows (Step.After), not the clock: on a loaded machine a
// bootstrap begins late and streams for minutes, and a kill placed by
// the clock lands in the stream (failing the bootstrap) while the leave
// is never dealt before the run ends. So: the spare n5 bootstraps (step
// 1); n1 is killed 10 s after n5's streaming is done, while the ring
// holds n5 (the window holds it until 150 s after its start: 30 s or
// more after a 120 s stream; a longer stream may put the kill in the
// decommission, which the window completes and its stop line's resumed
// records); n5 decommissions once n1 is back (a movement waits for the
// ring to be whole). Member n2 decommissions 5 s after that window
// ended; n3 is killed 10 s after n2's streaming is done, while n2 is
// out; n2 bootstraps back once n3 is up. The run lasts the row's time
// (the schedule's end if every movement were instant) and on until the
// last window has ended, at most nemesis.FollowWait more.
var membershipKills = nemesis.Schedule{Source: "issue 22: coordinator kills inside range movements, by hand; kills follow the movements", Steps: []nemesis.Step{
	{Kind: nemesis.Join, At: nemesis.Duration(2 * time.Second), For: nemesis.Duration(150 * time.Second), Value: []byte(`{"node":"n5"}`)},
	{Kind: nemesis.Kill, After: &nemesis.Follow{Step: 1, Phase: nemesis.Streamed}, At: nemesis.Duration(10 * time.Second), For: nemesis.Duration(8 * time.Second), Overlap: true, Nodes: []string{"n1"}},
	{Kind: nemesis.Leave, After: &nemesis.Follow{Step: 1, Phase: nemesis.Ended}, At: nemesis.Duration(5 * time.Second), For: nemesis.Duration(100 * time.Second), Value: []byte(`{"node":"n2"}`)},
	{Kind: nemesis.Kill, After: &nemesis.Follow{Step: 3, Phase: nemesis.Streamed}, At: nemesis.Duration(10 * time.Second), For: nemesis.Duration(8 * time.Second), Overlap: true, Nodes: []string{"n3"}},
}}

// accordFull is a 6.0-alpha cluster with Accord on and every table's
// transactional_mode full; accordFaults the faults its locks are judged
// under: partitions, node clock steps and client clock skew (the register
// takes the node kinds only: accordNodeFaults). No kill: a node of
// 6.0-alpha2 killed with Accord on does not start again (its journal's
// stop marker, docs/notes-on-cassandra.md), so a kill fails the run's
// heal and every run after it on the cluster. With accord.journal's stop_marker_failure_policy REBOOTSTRAP
// (Cluster.AccordStopMarker) a killed node starts again, but one killed
// again seconds after it came back never served CQL again (a run of
// register under kills ended unknown: docs/notes-on-cassandra.md), so no
// row deals kills on Accord yet.
//
// accordMixed is accordFull with transactional_mode mixed_reads (writes
// and SERIAL reads through Accord, other reads as before).
var (
	accordFull       = Cluster{Accord: "full"}
	accordMixed      = Cluster{Accord: "mixed_reads"}
	accordFaults     = FaultSet{Kinds: []string{nemesis.Partition, nemesis.Clock, nemesis.ClientClock}, Time: 45 * s, Interval: 3 * s}
	accordNodeFaults = FaultSet{Kinds: []string{nemesis.Partition, nemesis.Clock}, Time: 45 * s, Interval: 3 * s}
)
