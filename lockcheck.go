// Package lockcheck tests your own lock on Cassandra under faults, from Go:
// give it a constructor for your lock (a session, the keyspace and the
// client's clock in; a workload.Lock out) and, if your lock needs tables, a
// schema function. Run drives it with concurrent clients on the running
// cluster (`lockcheck cluster up`) under the faults you name, stores the
// history, checks it and writes the HTML report, as `lockcheck run` does;
// Test does the same inside `go test` and fails the test on an invalid
// verdict.
//
//	func TestMyLock(t *testing.T) {
//		lockcheck.Test(t, lockcheck.Lock{
//			Name:   "mylock",
//			Schema: mylock.CreateTable,
//			New: func(s *gocql.Session, keyspace string, clock workload.Clock) (workload.Lock, error) {
//				return mylock.New(s, keyspace), nil
//			},
//		}, lockcheck.WithNemesis("client-pause"), lockcheck.WithTime(20*time.Second))
//	}
//
// Your lock implements workload.Lock and wraps workload's sentinel errors:
// ErrNotAcquired or ErrHeldByOther when it certainly holds nothing,
// ErrUnknown when it cannot tell (a timed-out LWT), ErrNotHeld for a release
// of a lock it does not hold. A grant that expires says when in Grant.Lease.
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
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/runner"
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

// Lock is the lock under test.
type Lock struct {
	// Name names its runs in the store (default "mine"): lower-case words
	// joined by dashes.
	Name string
	// New makes one client's lock: once per client when the run starts,
	// and once before, to check that it can. clock is the client's clock,
	// which the client-clock fault moves: read it wherever your lock reads
	// the time.
	New func(s *gocql.Session, keyspace string, clock workload.Clock) (workload.Lock, error)
	// Schema creates the lock's tables in keyspace if they do not exist;
	// nil when it needs none.
	Schema func(ctx context.Context, s *gocql.Session, keyspace string) error
	// Promise is what the lock claims (default Mutex).
	Promise history.Promise
}

// entry is the lock as a recipe of the registry's kind.
func (l Lock) entry() (recipe.Entry, error) {
	if l.New == nil {
		return recipe.Entry{}, errors.New("lockcheck: Lock.New is required")
	}
	schema := l.Schema
	if schema == nil {
		schema = func(context.Context, *gocql.Session, string) error { return nil }
	}
	e := recipe.Entry{
		Name: cmp.Or(l.Name, "mine"), Promise: cmp.Or(l.Promise, Mutex), Schema: schema,
		New: func(s *gocql.Session, opts ...recipe.Option) (workload.Lock, error) {
			o := recipe.Defaults()
			if err := recipe.Configure(&o, &struct{}{}, opts); err != nil {
				return nil, err
			}
			return l.New(s, o.Keyspace, o.Clock)
		},
	}
	if err := e.Validate(); err != nil {
		return recipe.Entry{}, fmt.Errorf("lockcheck: %w", err)
	}
	return e, nil
}

// Option configures a run. Without options a run is `lockcheck run`'s
// default (runner.Defaults): 5 clients on 1 lock name for 60 s, no faults.
type Option func(*config)

type config struct {
	test    runner.Test
	cluster string
	nemesis []string
	hosts   *Hosts
}

// Hosts is a Cassandra cluster of your own (contact points, CQL port,
// keyspace, replication, data centre) and, in its SSH field, node access
// for the node faults (see the README: Your own cluster).
type Hosts = runner.External

// SSH is how the node faults reach your hosts: user, key, port, known
// hosts, the command that starts Cassandra after a kill, clock steps.
type SSH = sshnode.Config

// WithHosts runs on your own cluster instead of lockcheck's Docker cluster:
// the clients connect to h.Hosts; client faults need nothing more, node
// faults need h.SSH and are refused without it.
func WithHosts(h Hosts) Option { return func(c *config) { c.hosts = &h } }

// WithNemesis names the fault kinds: "partition", "pause", "kill", "clock",
// "loss", "power-loss", "rack-power-loss" (node faults; the power kinds need
// a cluster on the lazy filesystem), "client-pause", "client-clock", or
// "all" (nemesis.All: every kind that needs nothing of the nodes).
func WithNemesis(kinds ...string) Option {
	return func(c *config) { c.nemesis = append(c.nemesis, kinds...) }
}

// WithTime sets how long the clients and the faults run (default 60 s); a
// quiet phase and the final reads follow.
func WithTime(d time.Duration) Option { return func(c *config) { c.test.Time = d } }

// WithWorkload sets the clients' shape: "cycle" (default: acquire, write,
// release) or "leader" (each client tries to lead; a leader keeps the lock
// for many seconds, heartbeats with the lock's Renew, or re-acquires, and
// writes as leader while its lease lasts).
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

// WithSeed seeds every random choice (default: from the clock, logged).
func WithSeed(seed int64) Option { return func(c *config) { c.test.Seed = seed } }

// WithStore sets the directory runs are stored under (default "store"; Test:
// $LOCKCHECK_STORE or lockcheck-store in the temporary directory).
func WithStore(dir string) Option { return func(c *config) { c.test.Store = dir } }

// WithCluster names the running cluster to use (default $LOCKCHECK_CLUSTER,
// else "lockcheck").
func WithCluster(name string) Option { return func(c *config) { c.cluster = name } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.test.Log = l } }

// WithProgress writes a progress line about every second to w.
func WithProgress(w io.Writer) Option { return func(c *config) { c.test.Progress = w } }

// Result is what a run found.
type Result struct {
	Verdict checker.Verdict
	Dir     string // the run's directory in the store
	Report  string // its report.html
	Ops     int64  // operations recorded
	// Faults counts the fault windows started, by kind.
	Faults map[string]int
	// Check holds the anomalies and findings behind the verdict.
	Check checker.Result
}

// newTest checks lock and opts and makes the run's configuration.
func newTest(lock Lock, opts []Option) (runner.Test, string, error) {
	c := config{test: runner.Defaults(), cluster: cmp.Or(os.Getenv("LOCKCHECK_CLUSTER"), cluster.DefaultName)}
	for _, o := range opts {
		o(&c)
	}
	e, err := lock.entry()
	if err != nil {
		return c.test, "", err
	}
	c.test.Recipe = runner.FromEntry(e)
	if c.test.Nemesis, err = nemesis.ParseKinds(strings.Join(c.nemesis, ",")); err != nil {
		return c.test, "", fmt.Errorf("lockcheck: %w", err)
	}
	if err := c.test.Validate(); err != nil {
		return c.test, "", fmt.Errorf("lockcheck: %w", err)
	}
	if c.test.Seed == 0 {
		c.test.Seed = time.Now().UnixNano() % 1_000_000_000
	}
	if c.test.Log == nil {
		c.test.Log = slog.Default()
	}
	return c.test, c.cluster, nil
}

// Run tests lock on the running cluster: the clients, the faults, the
// history, the check and the report, as `lockcheck run` does. An error with
// a non-empty Result.Dir means the run directory holds what could be saved
// (and Verdict what could be checked).
func Run(ctx context.Context, lock Lock, opts ...Option) (Result, error) {
	t, name, err := newTest(lock, opts)
	if err != nil {
		return Result{}, err
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.hosts != nil {
		if cfg.hosts.Log == nil {
			cfg.hosts.Log = t.Log
		}
		env, err := runner.OpenExternal(ctx, *cfg.hosts, t.Nemesis)
		if err != nil {
			return Result{}, fmt.Errorf("lockcheck: %w", err)
		}
		defer env.Close()
		return run(ctx, env, t)
	}
	c, err := cluster.Attach(ctx, cluster.WithName(name), cluster.WithLogger(t.Log))
	if errors.Is(err, cluster.ErrNotRunning) {
		return Result{}, fmt.Errorf("lockcheck: start the cluster first (lockcheck cluster up --name %s): %w", name, err)
	}
	if err != nil {
		return Result{}, fmt.Errorf("lockcheck: cluster %s: %w", name, err)
	}
	t.Log.Info("lockcheck: run", "lock", t.Recipe.Name, "nemesis", t.Nemesis, "time", t.Time, "seed", t.Seed, "cluster", name)
	return run(ctx, runner.ClusterEnv{Cluster: c}, t)
}

func run(ctx context.Context, env runner.Env, t runner.Test) (Result, error) {
	out, err := runner.Run(ctx, env, runner.ReportStore{}, t)
	res := Result{Verdict: out.Verdict, Dir: out.Dir, Ops: out.Ops, Faults: out.Faults, Check: out.Result}
	if out.Dir != "" {
		res.Report = filepath.Join(out.Dir, "report.html")
	}
	if err != nil {
		return res, fmt.Errorf("lockcheck: %w", err)
	}
	return res, nil
}
