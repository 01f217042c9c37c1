// Package scenario holds every asserted row of lockcheck as data: which
// recipe, under which workload and faults, on which cluster, for how long,
// and what the run must show (valid every run, or, for a known-unsafe lock,
// caught in at least 9 runs of 10, or the lower rate measured). The jepsen tests of the runner and
// `lockcheck matrix` drive this table, and docs/findings.md is rendered
// from it with the catch rates measured (rates.jsonl), so that the verdicts
// the docs claim are the verdicts the tests assert.
//
// The package holds data and the rules that judge it; it runs nothing
// (package matrix makes a row's run: matrix.Test). A row is a Spec (Row.Spec)
// plus its expectation (Want, Unsafe, Catch, Tier, Mechanism).
package scenario

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/spec"
	"github.com/lockcheck/lockcheck/workload"
)

// Tier says when a row runs.
type Tier string

const (
	// Quick rows run in every `make test`.
	Quick Tier = "quick"
	// Full rows repeat a mechanism a quick row already shows: they run with
	// LOCKCHECK_FULL=1 (or when picked by name), so that `make test` stays
	// under 20 minutes on 2 cores.
	Full Tier = "full"
)

// What every row shares unless it says otherwise: 5 clients on 1 lock, and
// a quiet phase of 3 s after healing before the final reads.
const (
	DefaultClients = 5
	DefaultLocks   = 1
	Quiet          = 3 * time.Second
)

// Cluster is the cluster a row needs. The zero value is the shared cluster
// of the jepsen tests (`lockcheck cluster up`: 3 nodes, Paxos v1, no lazy
// filesystem, commitlog periodic); a row that needs anything else runs on a
// cluster of its own, started for it.
type Cluster struct {
	Nodes int    // 0: 3
	Paxos string // "" or "v1"; "v2"; a known-unsafe variant (cluster.Version.Unsafe)
	// LazyFS keeps the nodes' data on the lazy filesystem (the power
	// faults need it); Commitlog is then commitlog_sync, periodic or batch.
	LazyFS    bool
	Commitlog string // "": periodic

	// Shapes that move: spare nodes for the membership kinds (join,
	// leave, replace, remove), data centres for dc-partition and the
	// dc-local rows.
	Spares  int    // nodes started outside the ring, to join during the run
	DCs     int    // data centres (0: 1)
	Version string // Cassandra version ("": the node image's)
	// SkipPaxosRepair sets skip_paxos_repair_on_topology_change (Paxos v2).
	SkipPaxosRepair bool
	// PaxosStatePurging sets paxos_state_purging on 4.1 and later (legacy,
	// gc_grace, repaired: cluster.PaxosStatePurgings); "": the release's
	// default, legacy.
	PaxosStatePurging string `json:",omitempty"`
	// NoPaxosCache sets paxos_cache_size to 0 (4.1 and later;
	// cluster.WithoutPaxosCache): every Paxos round reads the node's
	// Paxos state from its tables, as compaction left it.
	NoPaxosCache bool `json:",omitempty"`
	// PaxosUpgrade lets a run switch the cluster from Paxos v1 to v2 (the
	// paxos-upgrade fault kind; cluster.WithPaxosUpgrade): a cluster of its
	// own, which every run starts on v1 again.
	PaxosUpgrade bool `json:",omitempty"`
	// Accord switches Accord on (6.0-alpha) with this default
	// transactional_mode (cluster.AccordModes): the lock and register
	// tables' LWTs run as Accord transactions. "": off.
	Accord string `json:",omitempty"`
	// AccordStopMarker sets accord.journal.stop_marker_failure_policy
	// (cluster.AccordStopMarkerPolicies; "": the release's, EXIT): what a
	// node killed with Accord on does at its next start.
	AccordStopMarker string `json:",omitempty"`
}

// Shared says whether the row runs on the shared cluster.
func (c Cluster) Shared() bool { return c.Key() == "" }

// Key names a cluster configuration: "" for the shared cluster, else the
// differences from it joined by "-" ("v2", "periodic", "batch": the names
// the configs matrix always had). Rows on one configuration share a cluster,
// and a row's name starts with its cluster's key.
func (c Cluster) Key() string {
	var parts []string
	if c.Nodes != 0 && c.Nodes != 3 {
		parts = append(parts, fmt.Sprintf("%dn", c.Nodes))
	}
	if c.Paxos != "" && c.Paxos != "v1" {
		parts = append(parts, paxosKey.Replace(c.Paxos))
	}
	if c.LazyFS {
		parts = append(parts, c.commitlog())
	} else if c.commitlog() != "periodic" {
		parts = append(parts, "sync-"+c.commitlog())
	}
	if c.Spares > 0 {
		parts = append(parts, fmt.Sprintf("%dspare", c.Spares))
	}
	if c.DCs > 1 {
		parts = append(parts, fmt.Sprintf("%ddc", c.DCs))
	}
	if c.SkipPaxosRepair {
		// "skip": skip_paxos_repair_on_topology_change (its rows were
		// named "skip-repair" until keys were held to MaxKey).
		parts = append(parts, "skip")
	}
	if c.PaxosStatePurging != "" {
		parts = append(parts, purgeKey.Replace(c.PaxosStatePurging))
	}
	if c.NoPaxosCache {
		parts = append(parts, "nc")
	}
	if c.PaxosUpgrade {
		parts = append(parts, "upgrade")
	}
	if c.Accord != "" {
		parts = append(parts, accordKey.Replace(c.Accord))
	}
	if c.AccordStopMarker != "" {
		parts = append(parts, stopMarkerKey.Replace(c.AccordStopMarker))
	}
	if c.Version != "" {
		parts = append(parts, "c"+c.Version)
	}
	return strings.Join(parts, "-")
}

// paxosKey shortens the known-unsafe variants' names for row names:
// v1_without_linearizable_reads_or_rejected_writes is "v1-unsafe",
// v2_without_linearizable_reads "v2-unsafe-reads".
var paxosKey = strings.NewReplacer("_without_linearizable_reads_or_rejected_writes", "-unsafe", "_without_linearizable_reads", "-unsafe-reads")

// purgeKey names paxos_state_purging values in keys, "p" and the value
// shortened: a cluster is named NAME-KEY, at most 31 characters
// (MaxKey), and the purging clusters name a patch release and the Paxos
// cache too ("lockcheck-v2-prep-nc-c4.1.5").
var purgeKey = strings.NewReplacer("gc_grace", "pgc", "repaired", "prep", "legacy", "plegacy")

// accordKey names a transactional_mode in keys: "accord" for full,
// "accord-mr" for mixed_reads ("lockcheck-accord-mr-c6.0-alpha" fits 31).
var accordKey = strings.NewReplacer("full", "accord", "mixed_reads", "accord-mr")

// stopMarkerKey names an Accord journal stop_marker_failure_policy in
// keys ("lockcheck-accord-rb-c6.0-alpha" fits 31).
var stopMarkerKey = strings.NewReplacer("REBOOTSTRAP", "rb", "ALLOW_UNSAFE_STARTUP", "unsafe", "EXIT", "exit")

func (c Cluster) commitlog() string {
	if c.Commitlog == "" {
		return "periodic"
	}
	return c.Commitlog
}

// String describes the configuration for people.
func (c Cluster) String() string {
	nodes := c.Nodes
	if nodes == 0 {
		nodes = 3
	}
	paxos := c.Paxos
	if paxos == "" {
		paxos = "v1"
	}
	s := fmt.Sprintf("%s, Paxos %s", plural(nodes, "node"), paxos)
	if c.LazyFS {
		s += ", lazyfs, commitlog " + c.commitlog()
	} else if c.commitlog() != "periodic" {
		s += ", commitlog " + c.commitlog()
	}
	if c.Spares > 0 {
		s += fmt.Sprintf(", %d spare", c.Spares)
	}
	if c.DCs > 1 {
		s += fmt.Sprintf(", %d DCs", c.DCs)
	}
	if c.SkipPaxosRepair {
		s += ", no Paxos repair on topology change"
	}
	if c.PaxosStatePurging != "" {
		s += ", paxos_state_purging " + c.PaxosStatePurging
	}
	if c.NoPaxosCache {
		s += ", no Paxos cache"
	}
	if c.PaxosUpgrade {
		s += ", switched to Paxos v2 and paxos_state_purging repaired during the run"
	}
	if c.Accord != "" {
		s += ", Accord (transactional_mode " + c.Accord + ")"
	}
	if c.AccordStopMarker != "" {
		s += ", Accord journal stop_marker_failure_policy " + c.AccordStopMarker
	}
	if c.Version != "" {
		s += ", Cassandra " + c.Version
	}
	if c.Shared() {
		s += " (shared)"
	}
	return s
}

// Row is one asserted scenario.
type Row struct {
	// Name is stable and short: tests are named after it, --rows and
	// LOCKCHECK_ROWS filter on it, measured rates refer to it. Form:
	// [cluster key/]recipe/faults[/shape][/dc-local].
	Name string
	// Recipe is the lock: a recipe of the registry, or, with Command, the
	// name the plug-in's runs are stored under (lower-case words joined by
	// dashes).
	Recipe string
	// Command is a --lock-cmd plug-in, a command line whose program is a
	// path relative to the repository's root (plugins/shedlock/run): the
	// row runs it instead of a recipe. Promise is what it promises ("":
	// mutex).
	Command  string
	Promise  history.Promise
	Workload string   // the clients' shape; "": workload.ShapeCycle
	Faults   []string // fault kinds; none: no fault
	Cluster  Cluster
	Time     time.Duration
	Interval time.Duration // mean time between faults
	// Pin pins the clients round-robin to the nodes (run --pin-clients),
	// which the aimed coord-* faults need.
	Pin bool
	// DCLocal runs the recipe at LOCAL_SERIAL and LOCAL_QUORUM (run
	// --dc-local); the row's name ends in /dc-local.
	DCLocal bool
	// RetireStuck moves the clients to a fresh lock name once a holder is
	// abandoned with a grant that never expires (run --retire-stuck): a
	// lock with no lease is otherwise held to the end of the run by the
	// first client whose write came back unknown.
	RetireStuck bool
	// Schedule, when set, is dealt instead of drawn faults: a shrunk
	// reproduction of a known flaw (`lockcheck shrink`), a regression row.
	// Faults are then its kinds, and the name ends in "/shrunk"; or a
	// schedule written to combine kinds whose windows overlap (a
	// coordinator cut during a range movement, which the drawn scheduler,
	// one window at a time, never deals): its name ends in "/overlapping".
	// A schedule
	// without steps is a flaw that needs no fault (the shrink's "no fault
	// is needed"): the row runs with none, shrunk in clients and time.
	Schedule *nemesis.Schedule
	Clients  int // 0: DefaultClients
	Locks    int // 0: DefaultLocks
	// SkewAhead sets client-clock's contender ahead instead of behind
	// (run --skew-ahead); the row's faults name it client-clock-ahead.
	SkewAhead bool
	// SkewMin and SkewMax bound client-clock's skew and coord-clock's
	// ahead (run --skew-min, --skew-max); zero: the defaults, 1s..30s and
	// the TTL plus 1-3 s.
	SkewMin, SkewMax time.Duration
	// Net bounds the shaping kinds' draws (run --net-delay, --net-jitter,
	// --net-rate); zero: nemesis.DefaultNetBounds.
	Net nemesis.NetBounds
	// Slow bounds the slowness kinds' draws (zero pairs: defaults).
	Slow nemesis.Slowness
	// AimWrite begins each window of coord-net-delay and coord-slow-node as
	// the next holder enters its critical section, on its coordinator (run
	// --aim-write), instead of at once.
	AimWrite bool `json:",omitempty"`
	// Seed is the seed of a single run; run r of a repeated row uses
	// Seed+r.
	Seed int64
	// Want is the verdict every run must give: checker.Invalid for a
	// known-unsafe row, checker.Valid for a safe one.
	Want checker.Verdict
	// Unsafe rows are known-unsafe: the assertion is a catch rate, invalid
	// in at least Catch of 10 runs (a once-through matrix: one of Tries
	// runs). Safe rows must be valid in every run.
	Unsafe bool
	// Catch is the runs of ten a known-unsafe row is caught in at least;
	// 0: 9. Lower only where measured lower: a flaw whose window a drawn
	// fault hits in some runs only (Reaper's slow write under a kill) is
	// still asserted, by its measured rate, not called safe.
	Catch int
	// FreesWithin asserts that every lock left held by a dead holder is
	// granted again within it (checked as the run's stuck bound: no stuck
	// period); StaysStuck that a lock is left held to the end. Liveness is
	// judged apart from the verdict (liveness.go).
	FreesWithin time.Duration
	StaysStuck  bool
	// Load, when set, marks a safe row whose verdict hinges on the
	// machine's load (LoadBound): valid where the load slows no request past
	// its lease, and on a loaded machine invalid only by the anomaly kinds
	// of its mechanism, which a slowness row deals on demand.
	Load *LoadBound `json:",omitempty"`
	// KillTarget is client-kill's target (run --kill-target; "": any).
	KillTarget string
	// Deletes makes the register's clients delete keys too (run
	// --deletes).
	Deletes bool `json:",omitempty"`
	// Ticket names the Cassandra bug a regression row shows, as the
	// project's tracker does ("CASSANDRA-19617"): the row is named after
	// it and its release (c19617-c4.1.5/...), and pins a release.
	Ticket string `json:",omitempty"`
	Tier   Tier
	// Mechanism says in a sentence or two why the lock fails or holds here.
	Mechanism string
}

// LoadBound is what a safe row's verdict may become on a loaded machine:
// a request slowed past its lease by the load alone (a write that lands
// after the next grant, an extend that times out) shows as Kinds, and Row,
// a slowness row of the same lock, deals that slowness on demand and is
// caught there. Such a row asserts its verdict (valid) or, in a run the load
// broke, that every anomaly is of Kinds: a verdict the catalogue states as
// load-dependent, never one a loaded machine contradicts.
type LoadBound struct {
	Row   string
	Kinds []string
}

// LoadAllows says whether a run's anomaly kinds are all ones the row's
// load bound allows (false for a row without one).
func (r Row) LoadAllows(kinds []string) bool {
	return r.Load != nil && len(kinds) > 0 && !slices.ContainsFunc(kinds, func(k string) bool { return !slices.Contains(r.Load.Kinds, k) })
}

// Shape is the row's workload shape with its default.
func (r Row) Shape() string {
	if r.Workload == "" {
		return workload.ShapeCycle
	}
	return r.Workload
}

// ClientCount is the row's clients with the default.
func (r Row) ClientCount() int {
	if r.Clients == 0 {
		return DefaultClients
	}
	return r.Clients
}

// LockCount is the row's lock names with the default.
func (r Row) LockCount() int {
	if r.Locks == 0 {
		return DefaultLocks
	}
	return r.Locks
}

// RunSeed is the seed of run r (0-based) of the row.
func (r Row) RunSeed(run int) int64 { return r.Seed + int64(run) }

// NodesUntouched says whether the row's faults all strike the clients (none
// at all included): nothing it deals reaches a node, so its run may share
// the cluster with another such run (make test's TestMatrix runs two at
// once). A node fault's heal would undo the other run's window.
func (r Row) NodesUntouched() bool { return !nemesis.AnyNodeKind(r.Faults) }

// Spec is the settings of run r (0-based) of the row: its lock, workload,
// faults, time, interval, clients, locks, pins, consistency, skews and the
// run's seed, with a quiet phase of Quiet; the rest spec.Defaults. A row
// with a schedule deals it (matrix.Test): its faults are then the
// schedule's kinds.
func (r Row) Spec(run int) spec.Spec {
	s := spec.Defaults()
	s.Lock, s.Promise = r.Recipe, string(r.Promise)
	s.Workload, s.Nemesis = r.Shape(), slices.Clone(r.Faults)
	s.Time, s.Interval, s.Seed = r.Time, r.Interval, r.RunSeed(run)
	s.Clients, s.Locks, s.Quiet = r.ClientCount(), r.LockCount(), Quiet
	s.PinClients, s.DCLocal, s.RetireStuck = r.Pin, r.DCLocal, r.RetireStuck
	s.SkewAhead, s.SkewMin, s.SkewMax = r.SkewAhead, r.SkewMin, r.SkewMax
	s.StuckBound = r.StuckBound()
	if r.KillTarget != "" {
		s.KillTarget = r.KillTarget
	}
	s.Deletes = r.Deletes
	if r.Net != (nemesis.NetBounds{}) {
		s.NetDelay, s.NetJitter, s.NetRate = r.Net.Flags()
	}
	s.SlowCPU, s.Stall, s.StallEvery, s.DiskLatency = r.Slow.FlagValues()
	s.AimWrite = r.AimWrite
	return s
}

// FaultsName is the faults as row names spell them: "none", "node-faults"
// for NodeFaults, else the kinds joined by "+".
func (r Row) FaultsName() string {
	switch {
	case len(r.Faults) == 0:
		return "none"
	case slices.Equal(r.Faults, NodeFaults):
		return "node-faults"
	}
	names := slices.Clone(r.Faults)
	if r.SkewAhead {
		for i, k := range names {
			if k == nemesis.ClientClock {
				names[i] = k + "-ahead"
			}
		}
	}
	return strings.Join(names, "+")
}

// Expected says what the row asserts, for tables.
func (r Row) Expected() string {
	e := "valid every run"
	if r.Unsafe {
		e = fmt.Sprintf("invalid >= %d/10", r.CatchBar())
	}
	if r.Load != nil {
		e = "valid, or slowed only " + strings.Join(r.Load.Kinds, ", ")
	}
	if w := r.liveWords(); w != "" {
		e += ", " + w
	}
	return e
}

// NodeFaults are every node fault kind of the nemesis's table that works on
// any cluster (nemesis.All by scope: partition, pause, kill, clock, loss), so
// that a kind added there joins the node-fault rows.
var NodeFaults = slices.DeleteFunc(nemesis.All(), func(k string) bool { return nemesis.ScopeOf(k) != nemesis.ScopeNode })

// CatchBar is the runs of ten a known-unsafe row must be caught in.
func (r Row) CatchBar() int {
	if r.Catch == 0 {
		return 9
	}
	return r.Catch
}

// Caught says whether invalid runs of runs meet the row's catch rate.
func (r Row) Caught(invalid, runs int) bool { return runs > 0 && invalid*10 >= r.CatchBar()*runs }

// Tries is how many runs a once-through matrix gives a known-unsafe row to
// be caught: enough that a row caught at its bar is missed in under one
// pass of a hundred (three at least, as a loaded machine catches less
// than the measurement did; ten for a bar of 4 of 10).
func (r Row) Tries() int {
	miss := 1 - float64(r.CatchBar())/10
	n := 3
	for math.Pow(miss, float64(n)) > 0.01 {
		n++
	}
	return n
}

var ticketRE = regexp.MustCompile(`^CASSANDRA-[0-9]+$`)

// MaxKey is the longest cluster key: a cluster of its own is named
// NAME-KEY, by default "lockcheck-" and the key, and a Docker network and
// container name, which the cluster's validation holds to 31 characters.
const MaxKey = 31 - len("lockcheck-")

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.+-]*(/[a-z0-9][a-z0-9.+-]*)*$`)

// pluginNameRE is a plug-in row's lock name (the registry's rule for names).
var pluginNameRE = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// Check tells what is inconsistent in the row: an expectation that cannot
// be asserted (unsafe without want invalid, want invalid without the catch
// rate), a name that does not say which cluster, faults or shape it runs,
// fields out of range. Whether the recipe exists is the runner's to say
// (runner.ScenarioTest).
func (r Row) Check() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if !nameRE.MatchString(r.Name) {
		bad("name %q: want lower-case words separated by /", r.Name)
	}
	if want := r.canonicalName(); r.Name != want {
		bad("name %q: want %q ([cluster key/]recipe/faults[/shape])", r.Name, want)
	}
	switch {
	case r.Want != checker.Valid && r.Want != checker.Invalid:
		bad("want %q: a row asserts valid or invalid", r.Want)
	case r.Unsafe && r.Want != checker.Invalid:
		bad("unsafe but want %s: a known-unsafe row asserts invalid", r.Want)
	case r.Catch < 0 || r.Catch > 9:
		bad("catch %d: a known-unsafe row's bar is 1 to 9 runs of 10 (0: 9)", r.Catch)
	case r.Catch != 0 && !r.Unsafe:
		bad("catch %d on a safe row: only a known-unsafe row has a catch rate", r.Catch)
	case !r.Unsafe && r.Want == checker.Invalid:
		bad("want invalid but not unsafe: a row that asserts invalid is known-unsafe and asserts its catch rate")
	case r.Load != nil && r.Unsafe:
		bad("a load bound on a known-unsafe row: only a safe row's verdict can hinge on the load")
	case r.Load != nil && (r.Load.Row == "" || len(r.Load.Kinds) == 0):
		bad("a load bound without its slowness row or its anomaly kinds")
	}
	if r.Command == "" && r.Promise != "" {
		bad("promise %q without a command: a recipe has its own", r.Promise)
	}
	if r.Command != "" {
		if !pluginNameRE.MatchString(r.Recipe) {
			bad("recipe %q: a plug-in's name is lower-case words joined by dashes", r.Recipe)
		}
		if r.Promise != "" && r.Promise != history.PromiseMutex && r.Promise != history.PromiseFenced {
			bad("promise %q: want %s or %s", r.Promise, history.PromiseMutex, history.PromiseFenced)
		}
		if prog := strings.Fields(r.Command)[0]; strings.HasPrefix(prog, "/") || strings.Contains(prog, "..") {
			bad("command %q: its program is a path inside the repository (plugins/NAME/run)", r.Command)
		}
	}
	r.checkLive(bad)
	if r.Tier != Quick && r.Tier != Full {
		bad("tier %q: want %s or %s", r.Tier, Quick, Full)
	}
	// The run's settings pass the checks `lockcheck run` applies: one
	// line each, naming the flag.
	if err := r.Spec(0).Validate(); err != nil {
		errs = append(errs, err)
	}
	if !slices.Contains(workload.Shapes, r.Shape()) && r.Shape() != workload.ShapeRegister {
		bad("workload %q: want one of %v or %s", r.Workload, workload.Shapes, workload.ShapeRegister)
	}
	if (r.Shape() == workload.ShapeRegister) != (r.Recipe == workload.ShapeRegister) {
		bad("recipe %q, workload %q: the register workload is its own recipe (Recipe and Workload both %q)", r.Recipe, r.Shape(), workload.ShapeRegister)
	}
	if r.Seed <= 0 {
		bad("seed %d: want a positive seed of its own", r.Seed)
	}
	for _, k := range r.Faults {
		if _, err := nemesis.Lookup(k); err != nil {
			bad("%v", err)
		}
		if nemesis.Aimed(k) && !r.Pin {
			bad("fault %s is aimed by the clients' coordinators: the row needs Pin", k)
		}
	}
	if r.Schedule != nil {
		if len(r.Schedule.Steps) > 0 {
			if err := r.Schedule.Validate(); err != nil {
				bad("%v", err)
			}
		}
		if len(r.Schedule.Steps) == 0 && strings.TrimSpace(r.Schedule.Source) == "" {
			bad("an empty schedule names its source (the run it was shrunk from): the docs show only that")
		}
		if !slices.Equal(r.Schedule.Kinds(), r.Faults) {
			bad("faults %v: want the schedule's kinds %v", r.Faults, r.Schedule.Kinds())
		}
		if end := r.Schedule.End(); end > r.Time {
			bad("the schedule's last window ends at %v, after the row's time %v", end, r.Time)
		}
	}
	if r.Ticket != "" && (!ticketRE.MatchString(r.Ticket) || r.Cluster.Version == "") {
		bad("ticket %q: want CASSANDRA-N on a cluster that pins its release (Cluster.Version)", r.Ticket)
	}
	if len(r.Cluster.Key()) > MaxKey {
		bad("cluster %s: its key %q is %d characters, over %d (the cluster's name is NAME-KEY, at most 31)", r.Cluster, r.Cluster.Key(), len(r.Cluster.Key()), MaxKey)
	}
	if slices.Contains(r.Faults, nemesis.PaxosUpgrade) && !r.Cluster.PaxosUpgrade {
		bad("fault %s switches the cluster's Paxos for good: the row needs a cluster of its own with PaxosUpgrade", nemesis.PaxosUpgrade)
	}
	if r.SkewAhead && !slices.Contains(r.Faults, nemesis.ClientClock) {
		bad("skew ahead without %s: it sets that fault's direction", nemesis.ClientClock)
	}
	if (r.SkewMin != 0 || r.SkewMax != 0) && !slices.Contains(r.Faults, nemesis.ClientClock) && !slices.Contains(r.Faults, nemesis.CoordClock) {
		bad("skew bounds without %s or %s: they bound those faults' skew", nemesis.ClientClock, nemesis.CoordClock)
	}
	if r.AimWrite && !slices.Contains(r.Faults, nemesis.CoordNetDelay) && !slices.Contains(r.Faults, nemesis.CoordSlowNode) {
		bad("aim at the write without %s or %s: it aims those faults' windows", nemesis.CoordNetDelay, nemesis.CoordSlowNode)
	}
	if r.Net != (nemesis.NetBounds{}) {
		shaped := slices.ContainsFunc(r.Faults, func(k string) bool {
			return k == nemesis.NetDelay || k == nemesis.NetRate || k == nemesis.CoordNetDelay
		})
		if !shaped {
			bad("net bounds without %s, %s or %s: they bound those faults' shaping", nemesis.NetDelay, nemesis.CoordNetDelay, nemesis.NetRate)
		}
		if err := r.Net.Validate(); err != nil {
			bad("%v", err)
		}
	}
	if err := r.Slow.Validate(r.Faults, r.Interval); err != nil {
		bad("%v", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if strings.TrimSpace(r.Mechanism) == "" {
		bad("no mechanism: say why the lock fails or holds")
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("row %q: %w", r.Name, err)
	}
	return nil
}

func (r Row) canonicalName() string {
	name := r.Recipe + "/" + r.FaultsName()
	switch k := r.Cluster.Key(); {
	case r.Ticket != "":
		// The ticket stands for the cluster the bug needs; the release
		// tells the buggy row from the fixed one.
		name = "c" + strings.TrimPrefix(r.Ticket, "CASSANDRA-") + "-c" + r.Cluster.Version + "/" + name
	case k != "":
		name = k + "/" + name
	}
	if r.Workload != "" && r.Workload != workload.ShapeCycle && r.Workload != r.Recipe {
		name += "/" + r.Workload
	}
	if r.DCLocal {
		name += "/dc-local"
	}
	switch {
	case r.Schedule != nil && r.Schedule.Overlapping():
		name += "/overlapping"
	case r.Schedule != nil:
		name += "/shrunk"
	}
	return name
}

// Check checks every row and that names and seeds are unique.
func Check(rows []Row) error {
	var errs []error
	// A ticket's rows share their seed: the buggy release and the fixed
	// one run the same draws.
	names, seeds, tickets := map[string]bool{}, map[int64]string{}, map[string]string{}
	for _, r := range rows {
		if err := r.Check(); err != nil {
			errs = append(errs, err)
		}
		if names[r.Name] {
			errs = append(errs, fmt.Errorf("row %q: name used twice", r.Name))
		}
		names[r.Name] = true
		if other, ok := seeds[r.Seed]; ok && !(r.Ticket != "" && tickets[other] == r.Ticket) {
			errs = append(errs, fmt.Errorf("row %q: seed %d is row %q's", r.Name, r.Seed, other))
		}
		seeds[r.Seed] = r.Name
		tickets[r.Name] = r.Ticket
	}
	return errors.Join(errs...)
}

// Lookup finds a row by its exact name.
func Lookup(name string) (Row, bool) {
	i := slices.IndexFunc(Rows, func(r Row) bool { return r.Name == name })
	if i < 0 {
		return Row{}, false
	}
	return Rows[i], true
}
