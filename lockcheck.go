// Package lockcheck tests a lock on Cassandra under faults, from Go: the
// same entry point `lockcheck run` goes through, so that everything the
// command can do a Go program can ask for with an Option.
//
// The lock under test is one of four (Lock): your own constructor (New, and
// Schema when your lock needs tables), one of lockcheck's recipes by name
// (Recipe), a plug-in command speaking lockcheck's JSON-lines protocol
// (Command, as --lock-cmd), or a REST lock service (URL, as --lock-url).
// Run drives it with concurrent clients on a Cassandra cluster (the running
// one of `lockcheck cluster up`, one it starts with WithStartIfMissing, or
// your own hosts with WithHosts) under the faults you name, stores the
// history, checks it and writes the HTML report; Test does the same inside
// `go test` and fails the test on a verdict that is not valid.
//
//	func TestMyLock(t *testing.T) {
//		lockcheck.Test(t, lockcheck.Lock{
//			Name:   "mylock",
//			Schema: mylock.CreateTable,
//			New: func(c lockcheck.Client) (workload.Lock, error) {
//				return mylock.New(c.Session, c.Keyspace, c.TTL), nil
//			},
//		}, lockcheck.WithNemesis("client-pause"), lockcheck.WithTime(20*time.Second), lockcheck.WithTTL(5*time.Second))
//	}
//
// Your lock implements workload.Lock and wraps workload's sentinel errors:
// ErrNotAcquired or ErrHeldByOther when it certainly holds nothing,
// ErrUnknown when it cannot tell (a timed-out LWT), ErrNotHeld for a release
// of a lock it does not hold. A grant that expires says when in Grant.Lease.
//
// From a module of your own: lockcheck is not published on a module proxy,
// so your go.mod requires it and replaces it with a checkout:
//
//	require github.com/lockcheck/lockcheck v0.0.0
//	replace github.com/lockcheck/lockcheck => ../lockcheck
//
// (then `go mod tidy -e`). examples/leaselock is such a lock, inside this
// module.
package lockcheck

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/exclusive"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/httplock"
	"github.com/lockcheck/lockcheck/lockcmd"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/spec"
	"github.com/lockcheck/lockcheck/sshnode"
	"github.com/lockcheck/lockcheck/workload"
)

// What a lock promises (Lock.Promise).
const (
	// Mutex: no two holds of a lock overlap and the protected resource
	// loses nothing (the default).
	Mutex = history.PromiseMutex
	// Fenced: holds may overlap, but grants carry growing tokens
	// (Grant.Token) and the resource refuses a stale holder's writes.
	Fenced = history.PromiseFenced
)

// Verdicts of a run (Result.Verdict).
const (
	Valid   = checker.Valid
	Invalid = checker.Invalid
	Unknown = checker.Unknown
)

// Lock is the lock under test: exactly one of New, Recipe, Command and URL.
type Lock struct {
	// Name names its runs in the store and the meta line's lock (default
	// "mine"; with Command the base name of its program, lockcmd.Name:
	// "python-lease" for plugins/python-lease/run; with URL "http"; a
	// Recipe keeps its own): lower-case words joined by dashes.
	Name string
	// New makes one client's lock: once per client when the run starts,
	// and once before, to check that it can.
	New func(c Client) (workload.Lock, error)
	// Schema creates New's tables in keyspace if they do not exist; nil
	// when it needs none.
	Schema func(ctx context.Context, s *gocql.Session, keyspace string) error
	// Promise is what the lock claims (default Mutex). A Recipe has its own.
	Promise history.Promise

	// Recipe names one of lockcheck's own recipes (RecipeNames), as
	// `lockcheck run --lock`.
	Recipe string
	// Command is a plug-in (sh -c), one process per client speaking JSON
	// lines on stdin and stdout, as `lockcheck run --lock-cmd`.
	Command string
	// URL is a REST lock service (http://HOST:PORT) with seed 004's
	// contract (package httplock), as `lockcheck run --lock-url`.
	URL string
}

// Client is what New makes one client's lock with.
type Client struct {
	Session  *gocql.Session
	Keyspace string // the run's keyspace: create your tables there (Schema)
	// Clock is the client's clock, which the client-clock fault moves: read
	// it wherever your lock reads the time.
	Clock workload.Clock
	// TTL is the run's lease TTL (WithTTL): the one the meta line and the
	// report record, and the one client-pause stalls a holder past.
	TTL time.Duration
	Log *slog.Logger
}

// RecipeNames are the names Lock.Recipe takes.
func RecipeNames() []string { return runner.RecipeNames() }

// recipe is the lock as the runner's recipe.
func (l Lock) recipe() (runner.Recipe, error) {
	given := 0
	for _, set := range []bool{l.New != nil, l.Recipe != "", l.Command != "", l.URL != ""} {
		if set {
			given++
		}
	}
	if given != 1 {
		return runner.Recipe{}, fmt.Errorf("give one of Lock.New, Lock.Recipe (--lock), Lock.Command (--lock-cmd) and Lock.URL (--lock-url), not %d", given)
	}
	promise := cmp.Or(l.Promise, Mutex)
	if (l.Command != "" || l.URL != "") && !recipe.KnownPromise(promise) {
		return runner.Recipe{}, fmt.Errorf("--promise must be %s or %s, got %q", Mutex, Fenced, l.Promise)
	}
	var r runner.Recipe
	switch {
	case l.Recipe != "":
		return runner.LookupRecipe(l.Recipe)
	case l.Command != "":
		r = runner.CmdRecipe(l.Command, promise)
		r.Name = lockcmd.Name(l.Command)
	case l.URL != "":
		// The address is checked here; whether it answers, before a run.
		d, err := httplock.New(l.URL)
		if err != nil {
			return runner.Recipe{}, fmt.Errorf("--lock-url: %w", err)
		}
		d.Close()
		r = runner.URLRecipe(l.URL, promise)
	default:
		e, err := l.entry()
		if err != nil {
			return runner.Recipe{}, err
		}
		return runner.FromEntry(e), nil
	}
	if l.Name != "" {
		// The registry's rule for names, checked by an entry's Validate.
		if err := (recipe.Entry{Name: l.Name, Promise: promise, New: nopNew, Schema: nopSchema}).Validate(); err != nil {
			return runner.Recipe{}, err
		}
		r.Name = l.Name
	}
	return r, nil
}

func nopNew(*gocql.Session, ...recipe.Option) (workload.Lock, error) { return nil, nil }

func nopSchema(context.Context, *gocql.Session, string) error { return nil }

// entry is a lock with New as a recipe of the registry's kind.
func (l Lock) entry() (recipe.Entry, error) {
	schema := l.Schema
	if schema == nil {
		schema = nopSchema
	}
	e := recipe.Entry{
		Name: cmp.Or(l.Name, "mine"), Promise: cmp.Or(l.Promise, Mutex), Schema: schema,
		New: func(s *gocql.Session, opts ...recipe.Option) (workload.Lock, error) {
			o := recipe.Defaults()
			if err := recipe.Configure(&o, &struct{}{}, opts); err != nil {
				return nil, err
			}
			return l.New(Client{Session: s, Keyspace: o.Keyspace, Clock: o.Clock, TTL: o.TTL, Log: o.Log})
		},
	}
	if err := e.Validate(); err != nil {
		return recipe.Entry{}, err
	}
	return e, nil
}

// Option configures a run. Without options a run is `lockcheck run`'s
// default (spec.Defaults): 5 clients on 1 lock name for 60 s, no faults,
// on the running cluster. The options of the run's settings set fields of
// its Spec.
type Option func(*config)

type config struct {
	test    runner.Test
	cluster string
	hosts   *Hosts
	start   bool // start a cluster when none runs
	nodes   int
	paxos   string
	version string // Cassandra release line of a cluster started
	keep    bool
}

// Hosts is a Cassandra cluster of your own (contact points, CQL port,
// keyspace, replication, data centre) and, in its SSH field, node access
// for the node faults.
type Hosts = runner.External

// SSH is how the node faults reach your hosts: user, key, port, known
// hosts, the command that starts Cassandra after a kill, clock steps.
type SSH = sshnode.Config

// WithHosts runs on your own cluster instead of lockcheck's Docker cluster
// (--hosts and the --ssh-* flags): the clients connect to h.Hosts; client
// faults need nothing more, node faults need h.SSH and are refused without it.
func WithHosts(h Hosts) Option { return func(c *config) { c.hosts = &h } }

// WithNemesis names the fault kinds: any of nemesis.Kinds (their reference
// is docs/faults.md, generated from nemesis's table of kinds), "all" (every
// kind that needs nothing of the nodes or the clients' pinning), or "none"
// (no faults, the default).
func WithNemesis(kinds ...string) Option {
	return func(c *config) { c.test.Nemesis = append(c.test.Nemesis, kinds...) }
}

// WithSpec sets every setting of the run at once (what `lockcheck run`'s
// flags fill, and what a stored run's meta line records: runner.SpecOf);
// options after it change single settings. Start s from spec.Defaults(): a
// zero field is checked as given (no clients is an error). Its lock name and
// promise are the Lock's: Lock{Recipe: s.Lock} runs a recipe's again.
func WithSpec(s Spec) Option { return func(c *config) { c.test.Spec = s } }

// Spec is a run's settings (package spec): the clients, the faults, the
// times, the seed; spec.Defaults is what a run without options has.
type Spec = spec.Spec

// WithSchedule deals s (nemesis.ScheduleFromHistory of a run, or a file:
// nemesis.LoadSchedule) in place of random faults: its kinds, times, nodes
// and parameters (`lockcheck replay`, `run --schedule`). The run's kinds
// are the schedule's; WithNemesis is then not given.
func WithSchedule(s nemesis.Schedule) Option { return func(c *config) { c.test.Schedule = &s } }

// WithTime sets how long the clients and the faults run (default 60 s); a
// quiet phase and the final reads follow.
func WithTime(d time.Duration) Option { return func(c *config) { c.test.Time = d } }

// WithTTL sets the lease TTL (default 3 s, at least 1 s): what lockcheck's
// lease recipes, a plug-in and a lock service are given, what Client.TTL
// says, and what the meta line records.
func WithTTL(d time.Duration) Option { return func(c *config) { c.test.TTL = d } }

// WithPauseExtra sets how much longer than its lease a holder paused by
// client-pause stalls (default nemesis.DefaultClientPauseExtra).
func WithPauseExtra(d time.Duration) Option { return func(c *config) { c.test.PauseExtra = d } }

// WithAcquireTimeout sets how long one acquire may take (default 5 s,
// --acquire-timeout): a library whose one attempt takes seconds needs more.
// Liveness counts availability with it.
func WithAcquireTimeout(d time.Duration) Option { return func(c *config) { c.test.AcquireTimeout = d } }

// WithStuckBound sets how long a lock left held by a dead holder may go
// without a grant before the run reports it stuck (--stuck-bound; default
// the TTL plus two acquire time-outs; refused below the TTL).
func WithStuckBound(d time.Duration) Option { return func(c *config) { c.test.StuckBound = d } }

// WithClientKill sets client-kill's restart delay (default
// nemesis.DefaultClientKillRestart) and target: nemesis.KillTargetAny,
// KillTargetHold, KillTargetAcquire or KillTargetRelease.
func WithClientKill(restart time.Duration, target string) Option {
	return func(c *config) { c.test.KillRestart, c.test.KillTarget = restart, target }
}

// WithNetBounds bounds what the shaping kinds draw (net-delay, net-rate,
// coord-net-delay; --net-delay, --net-jitter, --net-rate; default
// nemesis.DefaultNetBounds): bounds that make no sense (negative, a jitter
// above the smallest delay, a rate of zero) fail Plan in one line.
func WithNetBounds(b nemesis.NetBounds) Option {
	return func(c *config) { c.test.NetDelay, c.test.NetJitter, c.test.NetRate = b.Flags() }
}

// WithSkewAhead makes client-clock set the contender's clock ahead by its
// skew instead of behind (--skew-ahead): the fault of a lock whose expiry is
// a comparison of client clocks, as ShedLock's.
func WithSkewAhead() Option { return func(c *config) { c.test.SkewAhead = true } }

// WithSkew bounds client-clock's skew, drawn log-uniform in [min, max)
// (--skew-min, --skew-max; default 1s..30s), and coord-clock's ahead, drawn
// uniform in [min, max] (default: the TTL plus 1-3 s). A lock whose expiry a skew
// defeats only past its TTL, and whose large skews lock everyone out for as
// long, shows its flaw more often in a band just above the TTL.
func WithSkew(min, max time.Duration) Option {
	return func(c *config) { c.test.SkewMin, c.test.SkewMax = min, max }
}

// WithSlowness bounds the slowness kinds' draws (--slow-cpu, --stall,
// --stall-every, --disk-latency): slow-node's share of a core, a stall's
// length and the gap between stalls, slow-disk's latency. A zero pair
// takes its default (nemesis.DefaultSlowness).
func WithSlowness(s nemesis.Slowness) Option {
	return func(c *config) { c.test.SlowCPU, c.test.Stall, c.test.StallEvery, c.test.DiskLatency = s.FlagValues() }
}

// WithAimWrite begins each window of coord-net-delay and coord-slow-node as
// the next holder enters its critical section, between its read and its
// write, on that holder's coordinator (--aim-write), as coord-gc-stall's
// stalls are aimed: the write a lease protects then goes through the slowed
// node.
func WithAimWrite() Option { return func(c *config) { c.test.AimWrite = true } }

// WithPinClients sends client i's queries through node i mod nodes alone
// instead of the token-aware replica all clients share (--pin-clients): the
// coord-* faults need it. Only a lock with New or Recipe can be pinned.
func WithPinClients() Option { return func(c *config) { c.test.PinClients = true } }

// WithDCLocal runs the recipe at LOCAL_SERIAL and LOCAL_QUORUM instead of
// SERIAL and QUORUM (--dc-local), as a deployment in several data centres
// does for latency; on a cluster of several data centres the clients are
// placed in them round-robin. Only recipes that take it (lease,
// lease-fenced, lease-fenced-broken) accept it.
func WithDCLocal() Option { return func(c *config) { c.test.DCLocal = true } }

// WithRetireStuck moves the clients to a fresh lock name ("l0" -> "l0.1")
// when a holder is abandoned (its write's outcome unknown) with a grant that
// never expires (--retire-stuck): such a lock is held for good, and without
// it the rest of the run only times acquires out. Leased grants are left
// alone: their expiry frees the name.
func WithRetireStuck() Option { return func(c *config) { c.test.RetireStuck = true } }

// WithNoWait refuses a cluster another process holds (the error wraps
// exclusive.ErrBusy and names the holder) instead of waiting until it is
// free: every run takes its cluster before it heals or faults it.
func WithNoWait() Option { return func(c *config) { c.test.NoWait = true } }

// WithWorkload sets the clients' shape: "cycle" (default: acquire, write,
// release) or "leader" (each client tries to lead; a leader keeps the lock
// for many seconds, heartbeats with the lock's Renew, or re-acquires, and
// writes as leader while its lease lasts). "register" tests no lock but
// Cassandra's LWT itself, as a compare-and-set register per key (NewPlan
// then takes the zero Lock: docs/running.md).
func WithWorkload(shape string) Option { return func(c *config) { c.test.Workload = shape } }

// WithClients sets the number of concurrent clients (default 5).
func WithClients(n int) Option { return func(c *config) { c.test.Clients = n } }

// WithLocks sets how many lock names the clients contend for (default 1).
func WithLocks(n int) Option { return func(c *config) { c.test.Locks = n } }

// WithInterval sets the mean time between faults and mean fault length
// (default 10 s).
func WithInterval(d time.Duration) Option { return func(c *config) { c.test.Interval = d } }

// WithQuiet sets the quiet phase after the faults are healed, before the
// final reads (default 5 s; 0: none).
func WithQuiet(d time.Duration) Option { return func(c *config) { c.test.Quiet = d } }

// WithSeed seeds every random choice (default: from the clock, reported in
// Result.Seed).
func WithSeed(seed int64) Option { return func(c *config) { c.test.Seed = seed } }

// WithStore sets the directory runs are stored under (default "store"; Test:
// $LOCKCHECK_STORE or lockcheck-store in the temporary directory).
func WithStore(dir string) Option { return func(c *config) { c.test.Store = dir } }

// WithCluster names the cluster to use (default $LOCKCHECK_CLUSTER, else
// "lockcheck").
func WithCluster(name string) Option { return func(c *config) { c.cluster = name } }

// WithStartIfMissing starts a cluster of nodes nodes and Paxos variant
// paxos ("v1" or "v2") when none of that name runs (by default Run asks you
// to run `lockcheck cluster up`). A running cluster is used as it is. The
// cluster started is stopped after the run unless WithKeep.
func WithStartIfMissing(nodes int, paxos string) Option {
	return func(c *config) {
		c.nodes, c.paxos, c.start = nodes, paxos, true
	}
}

// WithCassandra sets the Cassandra release line of a cluster that
// WithStartIfMissing starts: "4.0", "4.1", "5.0" (the default) or
// "6.0-alpha" (cluster.Versions), or a pinned patch release such as
// "4.1.5" (cluster.PinnedVersions). A running cluster is used as it is, and
// the run's meta line records the release it runs.
func WithCassandra(version string) Option { return func(c *config) { c.version = version } }

// WithKeep leaves running a cluster that WithStartIfMissing started.
func WithKeep() Option { return func(c *config) { c.keep = true } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.test.Log = l } }

// WithProgress writes what the run is on (the cluster, the lock, the seed)
// and then a progress line about every second to w.
func WithProgress(w io.Writer) Option { return func(c *config) { c.test.Progress = w } }

// Result is what a run found: what `lockcheck run` prints.
type Result struct {
	Verdict checker.Verdict
	Dir     string // the run's directory in the store
	Report  string // its report.html
	Ops     int64  // operations recorded
	Seed    int64  // the seed the run used
	// Faults counts the fault windows started, by kind.
	Faults map[string]int
	// NeverDealt are the kinds asked for that the run never dealt (it
	// ended before their turn, or their starts failed).
	NeverDealt []string
	// Check holds the anomalies and findings behind the verdict.
	Check checker.Result
	// Phases are how long each phase took (faults, heal, quiet, final
	// reads); Requested is the time asked for, Took the whole run's.
	Phases    history.RunPhases
	Requested time.Duration
	Took      time.Duration
}

// Plan is a run's configuration as Run would use it, checked without
// touching the network.
type Plan struct {
	Test    runner.Test // the lock, the faults, the clients, TTL, pins, seed...
	Cluster string      // the cluster attached to (or started), without Hosts
	// Start is the shape of a cluster to start when none runs (nil:
	// attach only); Keep leaves it running.
	Start *ClusterShape
	Keep  bool
	Hosts *Hosts // the user's cluster instead

	url string // Lock.URL: asked whether it answers before a cluster starts
}

// ClusterShape is the shape of a cluster Run starts (WithStartIfMissing).
type ClusterShape struct {
	Nodes   int
	Paxos   string
	Version string // cluster.Versions
}

// NewPlan checks lock and opts and makes the run's configuration: what Run
// does first. The seed is drawn from the clock when none is given.
func NewPlan(lock Lock, opts ...Option) (Plan, error) {
	c := config{test: runner.Defaults(), cluster: cmp.Or(os.Getenv("LOCKCHECK_CLUSTER"), cluster.DefaultName)}
	for _, o := range opts {
		o(&c)
	}
	p := Plan{Test: c.test, Cluster: c.cluster, Keep: c.keep, Hosts: c.hosts, url: lock.URL}
	var err error
	if p.Test.Workload == workload.ShapeRegister {
		// The register tests Cassandra's LWT itself: there is no lock.
		if lock.New != nil || lock.Schema != nil || lock.Name != "" || lock.Recipe != "" || lock.Command != "" || lock.URL != "" || lock.Promise != "" {
			return p, errors.New("lockcheck: the register workload tests Cassandra's LWT itself: give no lock (--lock, --lock-cmd, --lock-url)")
		}
		p.Test.Recipe = runner.RegisterRecipe()
	} else if p.Test.Recipe, err = lock.recipe(); err != nil {
		return p, fmt.Errorf("lockcheck: %w", err)
	}
	if p.Test.Nemesis, err = nemesis.ParseKinds(strings.Join(p.Test.Nemesis, ",")); err != nil {
		return p, fmt.Errorf("lockcheck: %w", err)
	}
	if s := p.Test.Schedule; s != nil {
		if len(p.Test.Nemesis) > 0 {
			return p, errors.New("lockcheck: give a schedule or a nemesis list, not both (the schedule names its kinds)")
		}
		if err := s.Validate(); err != nil {
			return p, fmt.Errorf("lockcheck: %w", err)
		}
		p.Test.Nemesis = s.Kinds()
	}
	if c.start {
		switch {
		case c.nodes < 1 || c.nodes > cluster.MaxNodes:
			return p, fmt.Errorf("lockcheck: --nodes must be 1..%d, got %d", cluster.MaxNodes, c.nodes)
		}
		version := cmp.Or(c.version, cluster.DefaultVersion)
		if err := cluster.ValidateOptions(cluster.WithVersion(version), cluster.WithPaxos(c.paxos)); err != nil {
			return p, fmt.Errorf("lockcheck: %w", err)
		}
		p.Start = &ClusterShape{Nodes: c.nodes, Paxos: c.paxos, Version: version}
	}
	if err := p.Test.Validate(); err != nil {
		return p, fmt.Errorf("lockcheck: %w", err)
	}
	if p.Hosts != nil {
		if err := p.Hosts.Validate(); err != nil {
			return p, fmt.Errorf("lockcheck: %w", err)
		}
	}
	if p.Test.Seed == 0 {
		p.Test.Seed = time.Now().UnixNano() % 1_000_000_000
	}
	if p.Test.Log == nil {
		p.Test.Log = slog.Default()
	}
	return p, nil
}

// Run tests lock: the clients, the faults, the history, the check and the
// report, as `lockcheck run` does. An error with a non-empty Result.Dir
// means the run directory holds what could be saved (and Verdict what
// could be checked); a recipe that could not be set up wraps
// *runner.SetupError.
func Run(ctx context.Context, lock Lock, opts ...Option) (Result, error) {
	p, err := NewPlan(lock, opts...)
	if err != nil {
		return Result{}, err
	}
	return p.Run(ctx)
}

// Run runs the plan.
func (p Plan) Run(ctx context.Context) (Result, error) {
	t := p.Test
	say := func(format string, a ...any) {
		if t.Progress != nil {
			fmt.Fprintf(t.Progress, "lockcheck run: "+format+"\n", a...)
		}
	}
	if p.url != "" {
		if err := checkURL(ctx, p.url); err != nil {
			return Result{}, err
		}
	}
	env, done, err := p.open(ctx, say)
	if err != nil {
		return Result{}, err
	}
	defer done()
	nem := "none"
	if len(t.Nemesis) > 0 {
		nem = strings.Join(t.Nemesis, ",")
	}
	if t.Schedule != nil {
		nem = fmt.Sprintf("a schedule of %d faults (%s)", len(t.Schedule.Steps), nem)
	}
	say("%s under %s for %v, seed %d", t.Recipe.Name, nem, t.Time, t.Seed)
	start := time.Now()
	out, err := runner.Run(ctx, env, runner.ReportStore{}, t)
	res := Result{Verdict: out.Verdict, Dir: out.Dir, Ops: out.Ops, Seed: t.Seed, Faults: out.Faults, NeverDealt: out.NeverDealt, Check: out.Result,
		Phases: out.Phases, Requested: t.Time, Took: time.Since(start)}
	if out.Dir != "" {
		res.Report = filepath.Join(out.Dir, "report.html")
	}
	if err != nil {
		return res, fmt.Errorf("lockcheck: %w", err)
	}
	return res, nil
}

// checkURL asks a lock service whether it answers, before any cluster
// starts: a service that does not is bad input.
func checkURL(ctx context.Context, url string) error {
	d, err := httplock.New(url)
	if err != nil {
		return fmt.Errorf("lockcheck: --lock-url: %w", err)
	}
	defer d.Close()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := d.Check(cctx); err != nil {
		return fmt.Errorf("lockcheck: --lock-url: %w", err)
	}
	return nil
}

// open reaches the cluster the plan names, one of three ways: the user's
// hosts, the running cluster, or one it starts. done closes what open
// opened and stops a cluster it started (unless Keep).
func (p Plan) open(ctx context.Context, say func(string, ...any)) (env runner.Env, done func(), err error) {
	log := p.Test.Log
	if p.Hosts != nil {
		x := *p.Hosts
		if x.Log == nil {
			x.Log = log
		}
		octx, cancel := context.WithTimeout(ctx, time.Minute)
		e, err := runner.OpenExternal(octx, x, p.Test.Nemesis)
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("lockcheck: %w", err)
		}
		access := "no node access: client faults only"
		if x.SSH != nil {
			access = "node faults over SSH as " + x.SSH.User
		}
		say("using your cluster %s (keyspace %s, %s)", strings.Join(x.Hosts, ","), x.Keyspace, access)
		return e, func() { e.Close() }, nil
	}
	copts := []cluster.Option{cluster.WithName(p.Cluster), cluster.WithLogger(log)}
	if p.Start == nil {
		c, err := cluster.Attach(ctx, copts...)
		if errors.Is(err, cluster.ErrNotRunning) {
			return nil, nil, fmt.Errorf("lockcheck: start the cluster first (lockcheck cluster up --name %s): %w", p.Cluster, err)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("lockcheck: cluster %s: %w", p.Cluster, err)
		}
		say("using the running cluster (%d nodes, Cassandra %s, paxos %s)", len(c.Nodes()), c.Version().Cassandra, c.Paxos())
		return runner.ClusterEnv{Cluster: c}, func() {}, nil
	}
	copts = append(copts, cluster.WithNodes(p.Start.Nodes), cluster.WithPaxos(p.Start.Paxos), cluster.WithVersion(p.Start.Version))
	// Two runs that find no cluster would both start one of that name:
	// the first to hold it starts it, the other attaches to it. The run
	// itself takes it again before it heals or faults it.
	lease := exclusive.Local{Name: p.Cluster}
	held, err := exclusive.Take(ctx, lease, exclusive.NoWait(p.Test.NoWait), exclusive.Say(func(line string) { say("%s", line) }))
	if err != nil {
		return nil, nil, fmt.Errorf("lockcheck: %w", err)
	}
	c, started, err := runner.AttachOrStart(ctx, copts...)
	held.Release()
	if err != nil {
		return nil, nil, fmt.Errorf("lockcheck: cluster: %w", err)
	}
	if !started {
		say("using the running cluster (%d nodes, Cassandra %s, paxos %s)", len(c.Nodes()), c.Version().Cassandra, c.Paxos())
		return runner.ClusterEnv{Cluster: c}, func() {}, nil
	}
	say("started a %d-node cluster of Cassandra %s", len(c.Nodes()), c.Version().Cassandra)
	return runner.ClusterEnv{Cluster: c}, func() {
		if p.Keep {
			return
		}
		// Never from under another run that came to use it meanwhile.
		held, err := exclusive.Take(context.WithoutCancel(ctx), lease, exclusive.Say(func(line string) { say("%s", line) }))
		if err != nil {
			log.Warn("lockcheck: stop cluster", "err", err)
			return
		}
		defer held.Release()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := c.Stop(sctx, ""); err != nil {
			log.Warn("lockcheck: stop cluster", "err", err)
		}
	}, nil
}
