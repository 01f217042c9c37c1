// Package clustertest gives integration tests (build tag jepsen) of any
// package a running Cassandra cluster:
//
//	func TestMain(m *testing.M) { clustertest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		c := clustertest.Get(t)
//		...
//	}
//
// Main attaches to the cluster `lockcheck cluster up` left running (name
// "lockcheck", or $LOCKCHECK_CLUSTER), so that `make jepsen` starts one
// cluster for every package; when none runs, it starts one and removes it
// after the package's tests.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/exclusive"
	"github.com/lockcheck/lockcheck/nemesis"
)

var shared *cluster.Cluster

// Main runs the package's tests with a cluster and exits; call it from
// TestMain.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// Tests that only start clusters of their own run beside the shared
	// cluster's tests (make jepsen's second stream): attaching would heal
	// the faults those tests are injecting.
	// The nodes' kernel may lack netem: net-delay then copies
	// lockcheck-shaper into them, found through cluster.ShaperEnv.
	if os.Getenv(cluster.ShaperEnv) == "" {
		if p, err := buildStatic("lockcheck-shaper"); err == nil {
			os.Setenv(cluster.ShaperEnv, p)
		} else {
			fmt.Fprintf(os.Stderr, "clustertest: %v (net-delay needs netem then)\n", err)
		}
	}
	if os.Getenv("LOCKCHECK_SHARED") == "none" {
		return m.Run()
	}
	name := sharedName()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// The package's tests fault and heal the shared cluster: it is theirs
	// alone until they end (a `lockcheck run` on it waits, and the runs
	// these tests make share this process's holding). make test starts
	// every package's test binary early, and they wait here for one
	// another (and for the cluster being started): minutes, not a fault.
	wctx, wcancel := context.WithTimeout(context.Background(), leaseWait)
	lease, c, err := attach(wctx, name, log)
	wcancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "clustertest: cluster %s: %v\n", name, err)
		return 1
	}
	defer lease.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	started := false
	if c == nil {
		log.Info("clustertest: no running cluster; starting one for this package", "cluster", name)
		c, err = cluster.Start(ctx, cluster.WithName(name), cluster.WithLogger(log))
		started = true
		if err == nil {
			lease.SetClean(true) // a fresh cluster has nothing to heal
		}
	} else if lease.Clean() {
		// The process that held the cluster last left it healed and
		// healthy, and said so as it let go (exclusive.NotedStore): a
		// package whose tests passed, a run that ended healed. A probe of
		// every node would find nothing; the cluster need only be healthy.
		log.Info("clustertest: the last holder left the cluster healed: waiting until it is healthy", "cluster", name)
		if err = c.WaitHealthy(ctx); err != nil {
			err = fmt.Errorf("not healthy: %w", err)
		}
	} else {
		// A test that failed before healing, or a harness killed mid-run,
		// may have left a fault: every package starts from a known state
		// (and its first run trusts this heal: HealLeftovers notes it on
		// the holding).
		err = HealLeftovers(ctx, c, log)
	}
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "clustertest: cluster %s: %v\n", name, err)
		return 1
	}
	shared = c
	code := m.Run()
	if code != 0 {
		// A failed test may have left a fault it was to heal: the next
		// holder heals in full.
		lease.SetClean(false)
	}
	if started {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.Stop(sctx, os.Getenv("LOCKCHECK_CLUSTER_LOGS")); err != nil {
			fmt.Fprintf(os.Stderr, "clustertest: stop cluster %s: %v\n", name, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// leaseWait bounds Main's wait for the shared cluster's lease (and for
// the cluster being started): make test's shared stream starts runner's
// test binary as soon as the plug-ins are built, beside the other
// packages', and it waits for them.
const leaseWait = 30 * time.Minute

// StartingEnv names a file that says the shared cluster is being started
// (make test starts it beside the tests' build and removes the file when
// `cluster up` ends): while the file is there, Main waits for the cluster
// instead of starting one of its own, so that the test binaries are built
// and linked while the nodes come up.
const StartingEnv = "LOCKCHECK_CLUSTER_STARTING"

// attach takes the cluster's lease and attaches to it: a nil cluster (with
// the lease held) when none runs and none is being started. `lockcheck
// cluster up` holds the lease while it starts a cluster, so that a cluster
// attached is never a half-started one.
func attach(ctx context.Context, name string, log *slog.Logger) (*exclusive.Lease, *cluster.Cluster, error) {
	starting := os.Getenv(StartingEnv)
	said := false
	for {
		lease, err := exclusive.Take(ctx, exclusive.Local{Name: name}, exclusive.Say(func(line string) { log.Warn("clustertest: " + line) }))
		if err != nil {
			return nil, nil, err
		}
		c, err := cluster.Attach(ctx, cluster.WithName(name), cluster.WithLogger(log))
		if err == nil {
			return lease, c, nil
		}
		if !errors.Is(err, cluster.ErrNotRunning) {
			lease.Release()
			return nil, nil, err
		}
		if starting == "" {
			return lease, nil, nil
		}
		// Let `cluster up` take the lease, and ask again.
		lease.Release()
		if _, serr := os.Stat(starting); serr != nil {
			return nil, nil, fmt.Errorf("not running, and no longer being started (%s gone): did `lockcheck cluster up` fail?", starting)
		}
		if !said {
			log.Info("clustertest: waiting for the cluster being started", "cluster", name, StartingEnv, starting)
			said = true
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("waiting for it to start: %w", ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}

// TakeShared takes the shared cluster's lease and attaches to the running
// cluster, as Main does for a package (waiting as long, and for a cluster
// being started), for a test whose package's TestMain is not Main's. The
// caller releases the lease.
func TakeShared(t testing.TB) (*exclusive.Lease, *cluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), leaseWait)
	defer cancel()
	name := sharedName()
	log := slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	lease, c, err := attach(ctx, name, log)
	if err == nil && c == nil {
		lease.Release()
		err = fmt.Errorf("%w (lockcheck cluster up --name %s)", cluster.ErrNotRunning, name)
	}
	if err != nil {
		t.Fatalf("clustertest: cluster %s: %v", name, err)
	}
	return lease, c
}

// tWriter writes a logger's lines to t.Log.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// Get returns the cluster of the package's tests; it fails the test when
// TestMain did not call Main, or LOCKCHECK_SHARED=none kept it from
// attaching.
func Get(tb testing.TB) *cluster.Cluster {
	tb.Helper()
	if shared == nil {
		tb.Fatal("clustertest: no cluster: call clustertest.Main(m) from TestMain")
	}
	return shared
}

// HealLeftovers takes c (exclusive.Local, as `lockcheck run` does) and
// heals it with the heal-then-wait `lockcheck run` uses
// (nemesis.HealAndWait). (runner.HealLeftovers does the same from an Env;
// runner's tests import this package, so it cannot call runner.)
func HealLeftovers(ctx context.Context, c *cluster.Cluster, log *slog.Logger) error {
	lease, err := exclusive.Take(ctx, exclusive.Local{Name: c.Name()})
	if err != nil {
		return err
	}
	defer lease.Release()
	lease.SetClean(false)
	if _, err := c.RemoveStrayHelpers(ctx); err != nil {
		return err
	}
	var targets []nemesis.Target
	for _, n := range c.Nodes() {
		targets = append(targets, nemesis.Target{Name: n.Name, IP: n.IP, Node: n})
	}
	if _, err = nemesis.HealAndWait(ctx, targets, c, nil, log); err != nil {
		return err
	}
	// Healed and healthy within this process's holding: a run of the
	// holding only waits for a healthy cluster (runner/healed.go).
	lease.SetClean(true)
	return nil
}

// Start starts a cluster of the test's own, named after the shared one with
// suffix (so that parallel runs of `make jepsen` under other names do not
// collide), and removes it when the test ends. Tests that need another
// configuration (a lazy filesystem, Paxos v2) use it beside the shared one.
func Start(t *testing.T, suffix string, opts ...cluster.Option) *cluster.Cluster {
	t.Helper()
	OwnTurn(t)
	name := sharedName() + "-" + suffix
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	begin := time.Now()
	c, err := cluster.Start(ctx, append([]cluster.Option{cluster.WithName(name), cluster.WithLogger(log)}, opts...)...)
	if err != nil {
		t.Fatalf("clustertest: start cluster %s: %v", name, err)
	}
	t.Logf("clustertest: cluster %s up in %v", name, time.Since(begin).Round(time.Second))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.Stop(ctx, os.Getenv("LOCKCHECK_CLUSTER_LOGS")); err != nil {
			t.Errorf("clustertest: stop cluster %s: %v", name, err)
		}
	})
	return c
}

// sharedName is the shared cluster's name: $LOCKCHECK_CLUSTER, else
// cluster.DefaultName.
func sharedName() string {
	if name := os.Getenv("LOCKCHECK_CLUSTER"); name != "" {
		return name
	}
	return cluster.DefaultName
}

// OwnTurn waits for this machine's turn to run a cluster of the test's own
// (the lease of "<shared name>-own", exclusive.Local) and holds it until
// the test's cleanups end: tests of several packages that start clusters
// of their own (make test's second stream, go test -p 2) take turns, so
// that one such cluster runs beside the shared one, never two, while the
// next package's test binary is built and started. Start calls it; a test
// that starts a cluster itself calls it first (its cleanups, run in
// reverse order, stop the cluster before the turn ends).
func OwnTurn(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, set := d.Deadline(); set {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, end)
			defer cancel()
		}
	}
	name := sharedName() + "-own"
	begin := time.Now()
	lease, err := exclusive.Take(ctx, exclusive.Local{Name: name}, exclusive.Name(name),
		exclusive.Say(func(line string) { t.Logf("clustertest: clusters of a test's own take turns: %s", line) }))
	if err != nil {
		t.Fatalf("clustertest: the turn to start a cluster of the test's own: %v", err)
	}
	if w := time.Since(begin); w > time.Second {
		t.Logf("clustertest: waited %v for the turn to start a cluster of the test's own", w.Round(time.Second))
	}
	t.Cleanup(lease.Release)
}

var lazyFS struct {
	once sync.Once
	path string
	err  error
}

// buildStatic builds cmd/NAME static (for the nodes) into a directory of
// its own and returns its path.
func buildStatic(name string) (string, error) {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("find the module: %w", err)
	}
	dir, err := os.MkdirTemp("", name+"-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", path, "./cmd/"+name)
	cmd.Dir = strings.TrimSpace(string(root))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/%s: %w: %s", name, err, out)
	}
	return path, nil
}

// LazyFSBinary builds cmd/lockcheck-lazyfs (static, for the nodes) once per
// test binary and returns its path, for cluster.WithLazyFS; the binary
// $LOCKCHECK_LAZYFS_BIN names when it is set.
func LazyFSBinary(t *testing.T) string {
	t.Helper()
	// make jepsen names the one make build built.
	if p := os.Getenv("LOCKCHECK_LAZYFS_BIN"); p != "" {
		return p
	}
	lazyFS.once.Do(func() {
		root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
		if err != nil {
			lazyFS.err = fmt.Errorf("find the module: %w", err)
			return
		}
		dir, err := os.MkdirTemp("", "lockcheck-lazyfs-")
		if err != nil {
			lazyFS.err = err
			return
		}
		path := filepath.Join(dir, "lockcheck-lazyfs")
		cmd := exec.Command("go", "build", "-o", path, "./cmd/lockcheck-lazyfs")
		cmd.Dir = strings.TrimSpace(string(root))
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			lazyFS.err = fmt.Errorf("go build ./cmd/lockcheck-lazyfs: %w: %s", err, out)
			return
		}
		lazyFS.path = path
	})
	if lazyFS.err != nil {
		t.Fatalf("clustertest: %v", lazyFS.err)
	}
	return lazyFS.path
}

// Pause pauses node name (a cluster.Node, or a nemesis target's node) for a
// test. The cgroup freezer refuses now and then on a busy machine ("unable
// to freeze"), as the pause kind knows: it is asked again for up to 20 s,
// then the test is skipped.
func Pause(t testing.TB, ctx context.Context, name string, n interface{ Pause(context.Context) error }) {
	t.Helper()
	var err error
	for range 20 {
		if err = n.Pause(ctx); err == nil || !strings.Contains(err.Error(), "unable to freeze") {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil && strings.Contains(err.Error(), "unable to freeze") {
		t.Skipf("the cgroup freezer refused %s for 20 s: %v", name, err)
	}
	if err != nil {
		t.Fatal(err)
	}
}
