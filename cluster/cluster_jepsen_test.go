//go:build jepsen

package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
)

func TestMain(m *testing.M) { clustertest.Main(m) }

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func pinned(t *testing.T, ctx context.Context, c *cluster.Cluster, name string) *gocql.Session {
	t.Helper()
	n, err := c.Node(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.PinnedSession(ctx, n)
	if err != nil {
		t.Fatalf("pinned session on %s: %v", name, err)
	}
	t.Cleanup(s.Close)
	return s
}

// kvTable makes the table the tests write to.
func kvTable(t *testing.T, ctx context.Context, c *cluster.Cluster) {
	t.Helper()
	s, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Query(`CREATE TABLE IF NOT EXISTS cluster_test_kv (k text PRIMARY KEY, v text)`).ExecContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.AwaitSchemaAgreement(ctx); err != nil {
		t.Fatal(err)
	}
}

func key(t *testing.T) string {
	return fmt.Sprintf("%s-%d-%x", t.Name(), time.Now().UnixNano(), rand.Uint32())
}

func insertIfNotExists(ctx context.Context, s *gocql.Session, k, v string) (applied bool, existing string, err error) {
	m := map[string]any{}
	applied, err = s.Query(`INSERT INTO cluster_test_kv (k, v) VALUES (?, ?) IF NOT EXISTS`, k, v).MapScanCASContext(ctx, m)
	if s, ok := m["v"].(string); ok {
		existing = s
	}
	return applied, existing, err
}

func serialRead(ctx context.Context, s *gocql.Session, k string) (string, error) {
	var v string
	err := s.Query(`SELECT v FROM cluster_test_kv WHERE k = ?`, k).Consistency(gocql.Serial).ScanContext(ctx, &v)
	return v, err
}

func TestThreeNodesUp(t *testing.T) {
	c := clustertest.Get(t)
	ctx := ctxFor(t, 2*time.Minute)
	if got := len(c.Nodes()); got != 3 {
		t.Fatalf("%d nodes, want 3", got)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range st {
		if s.Name != "n"+strconv.Itoa(i+1) || s.State != "UN" || !strings.HasPrefix(s.Version, "5.0.") || s.Container != "running" {
			t.Errorf("status line %d = %+v, want n%d UN 5.0.x running", i, s, i+1)
		}
	}
	s := pinned(t, ctx, c, "n2")
	var rf string
	var repl map[string]string
	if err := s.Query(`SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?`, c.Keyspace()).ScanContext(ctx, &repl); err != nil {
		t.Fatal(err)
	}
	rf = repl["replication_factor"]
	if rf != strconv.Itoa(c.ReplicationFactor()) || rf != "3" {
		t.Errorf("keyspace %s replication %v, want factor 3", c.Keyspace(), repl)
	}
}

func TestLWTAgreesAcrossCoordinators(t *testing.T) {
	c := clustertest.Get(t)
	ctx := ctxFor(t, 2*time.Minute)
	kvTable(t, ctx, c)
	n1, n2, n3 := pinned(t, ctx, c, "n1"), pinned(t, ctx, c, "n2"), pinned(t, ctx, c, "n3")
	k := key(t)

	applied, _, err := insertIfNotExists(ctx, n1, k, "first")
	if err != nil || !applied {
		t.Fatalf("insert via n1: applied=%v err=%v, want applied", applied, err)
	}
	if v, err := serialRead(ctx, n3, k); err != nil || v != "first" {
		t.Fatalf("SERIAL read via n3: %q, %v; want %q", v, err, "first")
	}
	applied, existing, err := insertIfNotExists(ctx, n2, k, "second")
	if err != nil || applied || existing != "first" {
		t.Fatalf("second insert via n2: applied=%v existing=%q err=%v; want not applied, existing \"first\"", applied, existing, err)
	}
	if v, err := serialRead(ctx, n1, k); err != nil || v != "first" {
		t.Fatalf("SERIAL read via n1 after the second insert: %q, %v; want %q", v, err, "first")
	}
}

func TestPausedNodeQuorumServes(t *testing.T) {
	c := clustertest.Get(t)
	ctx := ctxFor(t, 4*time.Minute)
	kvTable(t, ctx, c)
	n3, _ := c.Node("n3")
	s1, s2 := pinned(t, ctx, c, "n1"), pinned(t, ctx, c, "n2")
	clustertest.Pause(t, ctx, n3.Name, n3)
	t.Cleanup(func() { n3.Unpause(context.Background()) })

	// Two of three replicas answer: Paxos has its quorum.
	for i := range 3 {
		k := key(t)
		qctx, cancel := context.WithTimeout(ctx, 40*time.Second)
		applied, err := insertServed(qctx, t, s1, k, "v"+strconv.Itoa(i))
		cancel()
		if err != nil || !applied {
			t.Fatalf("insert %d via n1 with n3 paused: applied=%v err=%v", i, applied, err)
		}
		if v, err := serialRead(ctx, s2, k); err != nil || v != "v"+strconv.Itoa(i) {
			t.Fatalf("SERIAL read via n2 with n3 paused: %q, %v", v, err)
		}
	}
	if err := c.WaitHealthy(ctx); err == nil {
		t.Fatal("WaitHealthy with n3 paused: no error")
	}
	if err := n3.Unpause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatalf("after unpause: %v", err)
	}
	s3 := pinned(t, ctx, c, "n3")
	k := key(t)
	if applied, _, err := insertIfNotExists(ctx, s3, k, "back"); err != nil || !applied {
		t.Fatalf("insert via n3 after unpause: applied=%v err=%v", applied, err)
	}
	if v, err := serialRead(ctx, s1, k); err != nil || v != "back" {
		t.Fatalf("SERIAL read via n1: %q, %v", v, err)
	}
}

// insertServed inserts k=v IF NOT EXISTS and tries again, up to eight
// times within ctx, when the Paxos round times out: right after a replica
// stops, on a loaded machine, the coordinator may wait for it until the
// failure detector gives up on it (seen: three timeouts in a row on a CI
// machine at load 15). A timeout is an unknown outcome, so a retry that
// finds our own value means the earlier round applied.
func insertServed(ctx context.Context, t *testing.T, s *gocql.Session, k, v string) (applied bool, err error) {
	for try := 1; try <= 8; try++ {
		var existing string
		applied, existing, err = insertIfNotExists(ctx, s, k, v)
		switch {
		case err == nil:
			return applied || existing == v, nil
		case !isTimeout(err) || ctx.Err() != nil:
			return false, err
		}
		t.Logf("insert %s try %d: %v (trying again)", k, try, err)
		select {
		case <-ctx.Done():
			return false, err
		case <-time.After(time.Second):
		}
	}
	return false, err
}

func isTimeout(err error) bool {
	var wt *gocql.RequestErrWriteTimeout
	var cas *gocql.RequestErrCASWriteUnknown
	return errors.As(err, &wt) || errors.As(err, &cas) || errors.Is(err, gocql.ErrTimeoutNoResponse)
}

// nodeNow is the node's clock as CQL shows it. Cassandra keeps the
// timestamps it hands out monotonic (a backward step is hidden until real
// time catches up), so this shows forward offsets only.
func nodeNow(ctx context.Context, s *gocql.Session) (time.Time, error) {
	var ms int64
	err := s.Query(`SELECT toUnixTimestamp(now()) FROM system.local`).Consistency(gocql.One).ScanContext(ctx, &ms)
	return time.UnixMilli(ms), err
}

// checkJVMOffset sets n's clock offset and checks that the JVM's wall
// clock moved by it.
func checkJVMOffset(t *testing.T, ctx context.Context, n *cluster.Node, off time.Duration) {
	t.Helper()
	if err := n.SetClockOffset(ctx, off); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	got, err := jvmClock(ctx, n)
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	// Log timestamps have millisecond precision: allow 1 s either side.
	if got.Before(before.Add(off-time.Second)) || got.After(after.Add(off+time.Second)) {
		t.Errorf("offset %v: JVM clock %v, want within [%v, %v]", off, got, before.Add(off), after.Add(off))
	}
}

// jvmClock is the JVM's raw wall clock, read from the timestamp of a log
// line it writes on request (nodetool setlogginglevel logs at INFO).
func jvmClock(ctx context.Context, n *cluster.Node) (time.Time, error) {
	probe := fmt.Sprintf("org.apache.cassandra.lockcheck.probe%d", time.Now().UnixNano())
	if _, err := n.Exec(ctx, "/opt/lockcheck/bin/nodetool", "setlogginglevel", probe, "INFO"); err != nil {
		return time.Time{}, err
	}
	// -a: a log that ever held bytes grep takes for binary (a client's
	// non-UTF-8 lock name echoed in a warning) would answer "binary file
	// matches" instead of the line.
	out, err := n.Exec(ctx, "grep", "-a", "-F", probe, "/var/log/cassandra/system.log")
	if err != nil {
		return time.Time{}, err
	}
	// INFO  [RMI TCP Connection(14)-127.0.0.1] 2026-11-21 23:43:26,961 LogbackLoggingSupport.java:118 - set log level ...
	f := strings.Fields(out[strings.Index(out, "]")+1:])
	if len(f) < 2 {
		return time.Time{}, fmt.Errorf("no timestamp in %q", out)
	}
	return time.ParseInLocation("2006-01-02 15:04:05,000", f[0]+" "+f[1], time.UTC)
}

func TestClockOffset(t *testing.T) {
	c := clustertest.Get(t)
	ctx := ctxFor(t, 2*time.Minute)
	n2, _ := c.Node("n2")
	s := pinned(t, ctx, c, "n2")
	t.Cleanup(func() { n2.SetClockOffset(context.Background(), 0) })
	// A small forward offset: Cassandra keeps the timestamps it hands out
	// monotonic, so a node that wrote anything (its own system tables do)
	// while ahead keeps stamping writes that far ahead until real time
	// catches up. An hour here once left n2 writing an hour in the future
	// for the lease tests that run after this package.
	for _, off := range []time.Duration{5 * time.Second, -90 * time.Second, 0} {
		checkJVMOffset(t, ctx, n2, off)
		if off > 0 {
			now, err := nodeNow(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if d := now.Sub(time.Now()) - off; d < -2*time.Second || d > 2*time.Second {
				t.Errorf("offset %v: CQL now() is %v off real time", off, now.Sub(time.Now()))
			}
		}
	}
}

func TestSignalKillRestart(t *testing.T) {
	c := clustertest.Get(t)
	ctx := ctxFor(t, 5*time.Minute)
	n3, _ := c.Node("n3")
	s3 := pinned(t, ctx, c, "n3")
	t.Cleanup(func() {
		// Leave the cluster whole for the next test, whatever happened.
		bg, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		n3.SignalJVM(bg, "CONT")
		if err := c.WaitHealthy(bg); err != nil {
			n3.Restart(bg)
		}
	})

	if err := n3.SignalJVM(ctx, "STOP"); err != nil {
		t.Fatal(err)
	}
	qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err := nodeNow(qctx, s3)
	cancel()
	if err == nil {
		t.Fatal("a stopped JVM answered")
	}
	// Unlike Pause, the container's other processes still run.
	if _, err := n3.Exec(ctx, "true"); err != nil {
		t.Fatalf("exec in a node whose JVM is stopped: %v", err)
	}
	if err := n3.SignalJVM(ctx, "CONT"); err != nil {
		t.Fatal(err)
	}
	if _, err := nodeNow(ctx, s3); err != nil {
		t.Fatalf("after CONT: %v", err)
	}

	if err := n3.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := n3.Exec(ctx, "true"); err == nil {
		t.Fatal("exec in a killed node worked")
	}
	// What `cluster status` says of it (TestFaultsNamesLeftovers names
	// the other leftovers; this kill serves both, one restart less).
	if f, err := n3.Faults(ctx); err != nil || !strings.HasPrefix(strings.Join(f, ", "), "container ") {
		t.Errorf("Faults of a killed node = %q (%v), want container exited", f, err)
	}
	if err := c.WaitHealthy(ctx); err == nil {
		t.Fatal("WaitHealthy with n3 killed: no error")
	}
	if err := n3.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

// labelled counts what Docker holds with the cluster's label.
func labelled(t *testing.T, ctx context.Context, name string) (containers, networks int) {
	t.Helper()
	d, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f := make(client.Filters).Add("label", "io.lockcheck.cluster="+name)
	cs, err := d.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := d.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs.Items), len(ns.Items)
}

// TestStartStopLeavesNothing starts a one-node cluster of its own name,
// refuses a second cluster on its subnet, stops it with logs and checks that
// nothing labelled remains; then bad input leaves nothing either. It needs
// no shared cluster: make test runs it in the stream of the tests that start
// clusters of their own.
func TestStartStopLeavesNothing(t *testing.T) {
	const name, clash = "lockcheck-stoptest", "lockcheck-stoptest-clash"
	clustertest.OwnTurn(t)
	ctx := ctxFor(t, 6*time.Minute)
	t.Cleanup(func() { cluster.Down(context.Background(), name); cluster.Down(context.Background(), clash) })
	image, err := cluster.BuildImage(ctx)
	if err != nil {
		t.Fatal(err)
	}

	c, err := cluster.Start(ctx, cluster.WithName(name), cluster.WithNodes(1), cluster.WithImage(image))
	if err != nil {
		t.Fatal(err)
	}
	if cs, ns := labelled(t, ctx, name); cs != 1 || ns != 1 {
		t.Fatalf("running: %d containers, %d networks labelled, want 1 and 1", cs, ns)
	}
	att, err := cluster.Attach(ctx, cluster.WithName(name))
	if err != nil || len(att.Nodes()) != 1 || att.Nodes()[0].IP != c.Nodes()[0].IP || att.GatewayIP() != c.GatewayIP() {
		t.Fatalf("Attach: %v", err)
	}
	// Another cluster on a running one's subnet is refused before anything
	// of it is made.
	if _, err := cluster.Start(ctx, cluster.WithName(clash), cluster.WithNodes(1), cluster.WithSubnet(c.Subnet()), cluster.WithImage(image)); !errors.Is(err, cluster.ErrNetworkClash) {
		t.Errorf("Start on %s's subnet: %v, want %v", name, err, cluster.ErrNetworkClash)
	}
	if cs, ns := labelled(t, ctx, clash); cs != 0 || ns != 0 {
		t.Errorf("after a refused Start: %d containers, %d networks labelled", cs, ns)
	}
	logs := t.TempDir()
	if err := c.Stop(ctx, logs); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(logs, "n1", "system.log")); err != nil || fi.Size() == 0 {
		t.Errorf("system.log not copied: %v", err)
	}
	if cs, ns := labelled(t, ctx, name); cs != 0 || ns != 0 {
		t.Fatalf("after Stop: %d containers, %d networks labelled", cs, ns)
	}
	if _, err := cluster.Attach(ctx, cluster.WithName(name)); !errors.Is(err, cluster.ErrNotRunning) {
		t.Errorf("Attach after Stop: %v, want ErrNotRunning", err)
	}
	if err := cluster.Down(ctx, name); err != nil {
		t.Errorf("Down of nothing: %v", err)
	}

	bad := []struct {
		name string
		opts []cluster.Option
		want error
	}{
		{"missing image", []cluster.Option{cluster.WithImage("lockcheck-no-such-image:0")}, cluster.ErrBadImage},
		{"image without Cassandra", []cluster.Option{cluster.WithImage(cluster.BaseImageRef(c.Version()))}, cluster.ErrBadImage},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			_, err := cluster.Start(ctx, append(b.opts, cluster.WithName(name), cluster.WithNodes(1))...)
			if !errors.Is(err, b.want) {
				t.Fatalf("Start: %v, want %v", err, b.want)
			}
			if cs, ns := labelled(t, ctx, name); cs != 0 || ns != 0 {
				t.Fatalf("after a failed Start: %d containers, %d networks labelled", cs, ns)
			}
		})
	}
}

// TestWaitHealthySeesPartition: WaitHealthy judges each node's own view, so
// a one-way partition (n1 drops what n3 sends) makes it fail, and it passes
// again once healed.
func TestWaitHealthySeesPartition(t *testing.T) {
	c := clustertest.Get(t)
	ctx := ctxFor(t, 4*time.Minute)
	n1, _ := c.Node("n1")
	n3, _ := c.Node("n3")
	t.Cleanup(func() { n1.Exec(context.Background(), "iptables", "-w", "-F", "INPUT") })
	if _, err := n1.Exec(ctx, "iptables", "-w", "-A", "INPUT", "-s", n3.IP, "-j", "DROP"); err != nil {
		t.Fatal(err)
	}
	// Each check reads at ALL through n1, which times out or is refused
	// at once: 10 s holds two or more checks, all failing.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := c.WaitHealthy(wctx)
	cancel()
	if err == nil {
		t.Fatal("WaitHealthy with n1 deaf to n3: no error")
	}
	t.Logf("partitioned: %v", err)
	if _, err := n1.Exec(ctx, "iptables", "-w", "-F", "INPUT"); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatalf("after healing: %v", err)
	}
}

// TestFaultsNamesLeftovers leaves on a node every fault a harness killed
// mid-run can leave, one after another, and checks that Faults (what `cluster
// status` prints) names each and that a paused container shows its rules and
// clock; the shared heal then clears what is left (the clock). A killed
// node's is checked where TestSignalKillRestart kills n3 (a restart costs
// make test's shared stream 20-30 s; the heal restarting a killed node is
// nemesis's TestHealLeftoversOnNodes).
func TestFaultsNamesLeftovers(t *testing.T) {
	c := clustertest.Get(t)
	ctx := ctxFor(t, 5*time.Minute)
	n, err := c.Node("n3")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = n.SignalJVM(context.Background(), "CONT")
		_, _ = n.Exec(context.Background(), "iptables", "-w", "-D", "INPUT", "-s", "10.199.0.250", "-j", "DROP")
		if err := clustertest.HealLeftovers(context.Background(), c, nil); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	faults := func() string {
		t.Helper()
		f, err := n.Faults(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(f, ", ")
	}
	if f := faults(); f != "" {
		t.Fatalf("n3 not clean at the start: %s", f)
	}
	steps := []struct {
		want  string
		leave func() error
	}{
		{"clock offset +3.000000", func() error { return n.SetClockOffset(ctx, 3*time.Second) }},
		{"1 iptables rules", func() error {
			_, err := n.Exec(ctx, "iptables", "-w", "-A", "INPUT", "-s", "10.199.0.250", "-j", "DROP")
			return err
		}},
		{"jvm stopped", func() error { return n.SignalJVM(ctx, "STOP") }},
	}
	for _, s := range steps {
		if err := s.leave(); err != nil {
			t.Fatalf("leave %s: %v", s.want, err)
		}
		if f := faults(); !strings.Contains(f, s.want) {
			t.Errorf("Faults = %q, want it to name %q", f, s.want)
		}
	}
	clustertest.Pause(t, ctx, n.Name, n)
	// Its rules are read from its network namespace and its clock file
	// through Docker's archive API; its JVM's state would need an exec,
	// which Docker refuses.
	const paused = "container paused, 1 iptables rules, clock offset +3.000000"
	if f := faults(); f != paused {
		t.Errorf("Faults of a paused node = %q, want %q (its stopped JVM cannot be read)", f, paused)
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Name == "n3" && strings.Join(s.Faults, ", ") != paused {
			t.Errorf("cluster status of the paused n3 says %q", s.Faults)
		}
	}
	if f, err := n.Foreign(ctx); err != nil || len(f) != 1 {
		t.Errorf("Foreign of the paused n3 = %q, %v: want its one rule", f, err)
	}
	if err := n.Unpause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.SignalJVM(ctx, "CONT"); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Exec(ctx, "iptables", "-w", "-D", "INPUT", "-s", "10.199.0.250", "-j", "DROP"); err != nil {
		t.Fatal(err)
	}
	if f := faults(); !strings.Contains(f, "clock offset +3.000000") || strings.Contains(f, "iptables") || strings.Contains(f, "jvm stopped") {
		t.Errorf("Faults after the thaw and the rule's removal = %q, want the clock's offset alone", f)
	}
	if err := clustertest.HealLeftovers(ctx, c, nil); err != nil {
		t.Fatalf("heal: %v", err)
	}
	if f := faults(); f != "" {
		t.Errorf("after the heal: Faults = %q, want none", f)
	}
}

// strayChild is set in the process TestStrayHelpersRemoved starts and
// kills: the cluster whose paused n3 it runs a long helper beside.
const strayChild = "LOCKCHECK_STRAY_CHILD"

// TestStrayHelpersRemoved kills a process while its helper container (a
// command in a paused node's network namespace) runs, and checks that
// RemoveStrayHelpers removes that helper and no live process's.
func TestStrayHelpersRemoved(t *testing.T) {
	if name := os.Getenv(strayChild); name != "" {
		ctx := ctxFor(t, 5*time.Minute)
		c, err := cluster.Attach(ctx, cluster.WithName(name))
		if err != nil {
			t.Fatal(err)
		}
		n, err := c.Node("n3")
		if err != nil {
			t.Fatal(err)
		}
		out, err := n.NetExec(ctx, "sleep", "240")
		t.Fatalf("the helper ended before the kill: %q, %v", out, err)
	}
	c := clustertest.Get(t)
	ctx := ctxFor(t, 4*time.Minute)
	n, err := c.Node("n3")
	if err != nil {
		t.Fatal(err)
	}
	clustertest.Pause(t, ctx, n.Name, n)
	t.Cleanup(func() { _ = n.Unpause(context.Background()) })
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	list := func(ctx context.Context) ([]string, error) {
		res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", "io.lockcheck.helper").Add("label", "io.lockcheck.cluster="+c.Name())})
		var ids []string
		if err == nil {
			for _, s := range res.Items {
				ids = append(ids, s.ID)
			}
		}
		return ids, err
	}
	// Whatever a failed run of this test leaves, it does not leave a helper.
	t.Cleanup(func() {
		ids, _ := list(context.Background())
		for _, id := range ids {
			_, _ = cli.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true})
		}
	})
	helpers := func() int {
		t.Helper()
		ids, err := list(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(ids)
	}
	waitHelpers := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); helpers() != want; time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d helper containers, want %d", helpers(), want)
			}
		}
	}
	if n := helpers(); n != 0 {
		t.Fatalf("%d helper containers before the test", n)
	}

	child := exec.Command(os.Args[0], "-test.run=^TestStrayHelpersRemoved$")
	child.Env = append(os.Environ(), strayChild+"="+c.Name(), "LOCKCHECK_SHARED=none")
	var childOut strings.Builder
	child.Stdout, child.Stderr = &childOut, &childOut
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = child.Process.Kill()
		_ = child.Wait()
		if t.Failed() {
			t.Logf("the killed process said: %s", childOut.String())
		}
	})
	waitHelpers(1)
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Reaped or not, the killed owner is dead (procStat's zombie state).

	// A live process's helper, running meanwhile, stays.
	live := make(chan error, 1)
	go func() {
		_, err := n.NetExec(ctx, "sleep", "6")
		live <- err
	}()
	waitHelpers(2)
	removed, err := c.RemoveStrayHelpers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 {
		t.Errorf("removed %q, want the killed process's one helper", removed)
	}
	// The live helper sleeps for seconds more: it is still there.
	if n := helpers(); n != 1 {
		t.Errorf("%d helper containers after the removal, want the live one", n)
	}
	if err := <-live; err != nil {
		t.Errorf("the live helper: %v", err)
	}
	waitHelpers(0)
}
