//go:build jepsen

package nemesis_test

import (
	"cmp"
	"context"
	"encoding/json"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
)

func TestMain(m *testing.M) { clustertest.Main(m) }

func targetsOf(c *cluster.Cluster) []nemesis.Target {
	var ts []nemesis.Target
	for _, n := range c.Nodes() {
		ts = append(ts, nemesis.Target{Name: n.Name, IP: n.IP, Node: n})
	}
	return ts
}

// twoOrMore returns the shared cluster, its targets and a 3-minute ctx,
// skipping a test that needs two nodes on a cluster of one.
func twoOrMore(t *testing.T) (*cluster.Cluster, []nemesis.Target, context.Context) {
	c := clustertest.Get(t)
	ts := targetsOf(c)
	if len(ts) < 2 {
		t.Skip("needs a cluster of 2 nodes or more (LOCKCHECK_NODES)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return c, ts, ctx
}

// dropped sums the packet counters of the chain's rules.
func dropped(t *testing.T, ctx context.Context, n nemesis.Node, c string) int {
	t.Helper()
	out, err := n.Exec(ctx, "iptables", "-w", "-L", c, "-v", "-n", "-x")
	if err != nil {
		t.Fatalf("counters of %s: %v", c, err)
	}
	sum := 0
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 2 && f[2] == "DROP" {
			p, err := strconv.Atoi(f[0])
			if err != nil {
				t.Fatalf("counter line %q", l)
			}
			sum += p
		}
	}
	return sum
}

// seedFor finds a seed whose loss fault takes the given mode.
func seedFor(t *testing.T, ts []nemesis.Target, gateway, mode string) int64 {
	for seed := range int64(100) {
		n, err := nemesis.New(ts, &nemesis.MemRec{}, nemesis.WithKinds(nemesis.Loss), nemesis.WithSeed(seed), nemesis.WithGateway(gateway), nemesis.WithLoss(0.5, 0.5))
		if err != nil {
			t.Fatal(err)
		}
		if nemesis.LossMode(n) == mode {
			return seed
		}
	}
	t.Fatalf("no seed draws loss mode %s", mode)
	return 0
}

// TestLossDropsAndHeals: on the real nodes, the loss fault's rules drop
// packets (their counters grow: gossip between nodes, connection attempts
// from the clients' gateway), and the stop removes its chain and jump and
// nothing else; a reset then finds nothing. About 15 s.
func TestLossDropsAndHeals(t *testing.T) {
	c, ts, ctx := twoOrMore(t)
	// A rule of the node's own, which no heal may touch.
	own := []string{"INPUT", "-p", "tcp", "--dport", "9999", "-j", "ACCEPT"}
	if _, err := ts[0].Node.Exec(ctx, append([]string{"iptables", "-w", "-A"}, own...)...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts[0].Node.Exec(context.Background(), append([]string{"iptables", "-w", "-D"}, own...)...) })

	for _, mode := range []string{"nodes", "clients"} {
		t.Run(mode, func(t *testing.T) {
			rec := &nemesis.MemRec{}
			n, err := nemesis.New(ts, rec, nemesis.WithKinds(nemesis.Loss), nemesis.WithSeed(seedFor(t, ts, c.GatewayIP(), mode)), nemesis.WithGateway(c.GatewayIP()), nemesis.WithLoss(0.5, 0.5))
			if err != nil {
				t.Fatal(err)
			}
			stop, err := nemesis.StartKind(ctx, n, 0)
			if err != nil {
				t.Fatal(err)
			}
			lossy := strings.Split(rec.All()[0].Node, ",")
			if mode == "clients" {
				// Connection attempts from the harness: half their packets go.
				for _, tg := range ts {
					if !slices.Contains(lossy, tg.Name) {
						continue
					}
					for range 40 {
						if conn, err := net.DialTimeout("tcp", net.JoinHostPort(tg.IP, "9042"), 200*time.Millisecond); err == nil {
							conn.Close()
						}
					}
				}
			}
			total := func() int {
				n := 0
				for _, tg := range ts {
					if slices.Contains(lossy, tg.Name) {
						n += dropped(t, ctx, tg.Node, nemesis.ChainOf(nemesis.Loss))
					}
				}
				return n
			}
			// Gossip and internode traffic (nodes), or the dials above
			// (clients), meet the rule: wait for a drop, within a bound.
			for wait := time.Now().Add(time.Minute); total() == 0 && mode == "nodes" && time.Now().Before(wait); {
				time.Sleep(250 * time.Millisecond)
			}
			if total() == 0 {
				t.Errorf("%s: no packet dropped on %v", mode, lossy)
			}
			t.Logf("%s: %d packets dropped on %v", mode, total(), lossy)
			if err := stop(ctx); err != nil {
				t.Fatal(err)
			}
			for _, tg := range ts {
				out, err := tg.Node.Exec(ctx, "iptables", "-w", "-S")
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(out, "LOCKCHECK") {
					t.Errorf("%s after the stop:\n%s", tg.Name, out)
				}
				if tg.Name == ts[0].Name && !strings.Contains(out, "-A INPUT -p tcp -m tcp --dport 9999 -j ACCEPT") {
					t.Errorf("the node's own rule is gone:\n%s", out)
				}
			}
		})
	}
	if healed, err := nemesis.HealLeftovers(ctx, ts, nil, nil); err != nil || len(healed) > 0 {
		t.Errorf("leftovers after the stops: %v, %v", healed, err)
	}
}

// TestHealLeftoversOnNodes: every node fault kind started by a nemesis that
// then vanished (no stop, no heal: its process was killed) is found and
// undone by nemesis.HealLeftovers from the nodes' own state, and the cluster
// serves again. About a minute (a killed node restarts).
func TestHealLeftoversOnNodes(t *testing.T) {
	c := clustertest.Get(t)
	ts := targetsOf(c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Rules and clocks first, then what freezes or stops a node: the
	// later faults hide the earlier from anything but a reset that asks.
	var kinds []string
	for _, k := range nemesis.All() {
		if nemesis.ScopeOf(k) == nemesis.ScopeNode && k != nemesis.Pause && k != nemesis.Kill {
			kinds = append(kinds, k)
		}
	}
	kinds = append(kinds, nemesis.Pause)
	if len(ts) > 1 {
		// On one node the kill would restart the paused, skewed, walled-off
		// node and hide every other leftover (cluster's
		// TestResetUndoesLeftovers covers a stopped node there too).
		kinds = append(kinds, nemesis.Kill)
	}
	n, err := nemesis.New(ts, &nemesis.MemRec{}, nemesis.WithKinds(kinds...), nemesis.WithSeed(3), nemesis.WithGateway(c.GatewayIP()))
	if err != nil {
		t.Fatal(err)
	}
	started := map[string]bool{}
	for i, k := range kinds {
		if _, err := nemesis.StartKind(ctx, n, i); err != nil {
			t.Logf("start %s: %v", k, err)
			continue
		}
		started[k] = true
	}
	nemesis.Vanish(n)
	rec := &nemesis.MemRec{}
	healed, err := nemesis.HealLeftovers(ctx, ts, rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each healed node is one heal-leftover line of the nemesis process, so
	// that the run's report shows it.
	var lines []string
	for _, op := range rec.All() {
		if op.F != history.FHealLeftover || op.Process != history.NemesisProcess || op.Type != history.Info {
			t.Errorf("HealLeftovers recorded %+v", op)
			continue
		}
		var l history.HealLeftover
		if err := json.Unmarshal(op.Value, &l); err != nil || l.Node != op.Node || len(l.Healed) == 0 {
			t.Errorf("heal-leftover line %s on %s: %v", op.Value, op.Node, err)
		}
		lines = append(lines, op.Node+":"+strings.Join(l.Healed, ","))
	}
	var want []string
	for _, l := range healed {
		want = append(want, l.Node+":"+strings.Join(l.Healed, ","))
	}
	if len(want) == 0 || !slices.Equal(lines, want) {
		t.Errorf("recorded %q, healed %q", lines, want)
	}
	// The nodes said what they showed before the heal (cluster.Node.Faults).
	for _, l := range healed {
		if len(l.Found) == 0 {
			t.Errorf("%s: healed %q but found nothing", l.Node, l.Healed)
		}
	}
	got := map[string]bool{}
	for _, l := range healed {
		for _, k := range l.Healed {
			got[k] = true
		}
	}
	t.Logf("started %v, healed %+v", started, healed)
	// A restarted container comes with fresh rules, so which node reports
	// partition or loss depends on the draw; pause and kill always show.
	for _, k := range []string{nemesis.Pause, nemesis.Kill} {
		if started[k] && !got[k] {
			t.Errorf("%s was left but not healed (healed %+v)", k, healed)
		}
	}
	if !got[nemesis.Partition] && !got[nemesis.Loss] && !got[nemesis.Clock] {
		t.Errorf("no rule or clock healed on any node: %+v", healed)
	}
	// The nodes themselves are clean.
	for _, tg := range ts {
		if st, err := tg.Node.State(ctx); err != nil || st != "running" {
			t.Errorf("%s: state %q, %v", tg.Name, st, err)
		}
		if d, err := tg.Node.ClockOffset(ctx); err != nil || d != 0 {
			t.Errorf("%s: clock offset %v, %v", tg.Name, d, err)
		}
		if out, err := tg.Node.Exec(ctx, "iptables", "-w", "-S"); err != nil || strings.Contains(out, "LOCKCHECK") {
			t.Errorf("%s: rules after the heal: %v\n%s", tg.Name, err, out)
		}
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatalf("not healthy after the heal: %v", err)
	}
	if again, err := nemesis.HealLeftovers(ctx, ts, nil, nil); err != nil || len(again) > 0 {
		t.Errorf("second heal found %+v, %v", again, err)
	}
}

// pauseAll freezes every node's container for the rest of the test (the
// cleanup thaws them and heals what a failed test left). The cgroup freezer
// refuses now and then on a busy machine ("unable to freeze"): clustertest.Pause
// asks again a while.
func pauseAll(t *testing.T, ctx context.Context, c *cluster.Cluster, ts []nemesis.Target) {
	t.Cleanup(func() { clustertest.HealLeftovers(context.Background(), c, nil) })
	for _, tg := range ts {
		clustertest.Pause(t, ctx, tg.Name, tg.Node)
		t.Cleanup(func() { tg.Node.Unpause(context.Background()) })
	}
}

// stillPaused fails the test for a node the faults' stop did not meet
// paused (a thaw would have hidden what the test is about).
func stillPaused(t *testing.T, ctx context.Context, ts []nemesis.Target) {
	t.Helper()
	for _, tg := range ts {
		if st, _ := tg.Node.State(ctx); st != "paused" {
			t.Errorf("%s is %s: the test wants the stop to meet it paused", tg.Name, st)
		}
	}
}

// TestCutsReachPausedNodes: a partition cut while every node's container is
// paused (docker exec refuses each) takes its rules on the nodes it names,
// and its stop removes them while they are still paused. About 10 s.
func TestCutsReachPausedNodes(t *testing.T) {
	c, ts, ctx := twoOrMore(t)
	pauseAll(t, ctx, c, ts)
	rec := &nemesis.MemRec{}
	n, err := nemesis.New(ts, rec, nemesis.WithKinds(nemesis.Partition), nemesis.WithSeed(1), nemesis.WithGateway(c.GatewayIP()))
	if err != nil {
		t.Fatal(err)
	}
	stop, err := nemesis.StartKind(ctx, n, 0)
	if err != nil {
		t.Fatalf("cut of paused nodes: %v", err)
	}
	chain := nemesis.ChainOf(nemesis.Partition)
	rules := func(tg nemesis.Target) string {
		out, err := tg.Node.(nemesis.NetExecer).NetExec(ctx, "iptables", "-w", "-S")
		if err != nil {
			t.Fatalf("%s: %v", tg.Name, err)
		}
		return out
	}
	var start nemesis.PartitionStart
	if err := json.Unmarshal(rec.All()[0].Value, &start); err != nil || len(start.Grudge) == 0 {
		t.Fatalf("start line %s: %v", rec.All()[0].Value, err)
	}
	g := start.Grudge
	for _, tg := range ts {
		if has := strings.Contains(rules(tg), "-A "+chain+" -s "); has != (len(g[tg.Name]) > 0) {
			t.Errorf("%s: a drop rule is %v, its grudge %v", tg.Name, has, g[tg.Name])
		}
		// What `cluster status` and the leftover heal's record say of it.
		f, err := tg.Node.(*cluster.Node).Faults(ctx)
		if err != nil || !slices.Contains(f, "container paused") || (len(g[tg.Name]) > 0) != slices.ContainsFunc(f, func(s string) bool { return strings.HasSuffix(s, "iptables rules") }) {
			t.Errorf("%s: faults %q (%v), its grudge %v", tg.Name, f, err, g[tg.Name])
		}
	}
	if err := stop(ctx); err != nil {
		t.Fatalf("heal of paused nodes: %v", err)
	}
	for _, tg := range ts {
		if out := rules(tg); strings.Contains(out, "LOCKCHECK") {
			t.Errorf("%s after the stop:\n%s", tg.Name, out)
		}
	}
	stillPaused(t, ctx, ts)
}

// TestClockReachesPausedNodes: a clock fault dealt while every node's
// container is paused sets the offsets its start line records (read back
// from the frozen nodes), and its stop sets them to zero. About 10 s.
func TestClockReachesPausedNodes(t *testing.T) {
	c, ts, ctx := twoOrMore(t)
	pauseAll(t, ctx, c, ts)
	rec := &nemesis.MemRec{}
	n, err := nemesis.New(ts, rec, nemesis.WithKinds(nemesis.Clock), nemesis.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	stop, err := nemesis.StartKind(ctx, n, 0)
	if err != nil {
		t.Fatalf("clock of paused nodes: %v", err)
	}
	var start history.ClockStart
	if err := json.Unmarshal(rec.All()[0].Value, &start); err != nil || len(start.Offsets) == 0 {
		t.Fatalf("start line %s: %v", rec.All()[0].Value, err)
	}
	t.Logf("start-clock %s", rec.All()[0].Value)
	if start.Kind == "bump" {
		// A strobe flips its offsets back and forth: only its stop is
		// asserted.
		for _, tg := range ts {
			want, _ := time.ParseDuration(cmp.Or(start.Offsets[tg.Name], "0s"))
			if got, err := tg.Node.ClockOffset(ctx); err != nil || got != want {
				t.Errorf("%s: clock offset %v (%v), its start line says %v", tg.Name, got, err, want)
			}
		}
	}
	if err := stop(ctx); err != nil {
		t.Fatalf("stop on paused nodes: %v", err)
	}
	for _, tg := range ts {
		if got, err := tg.Node.ClockOffset(ctx); err != nil || got != 0 {
			t.Errorf("%s after the stop: clock offset %v (%v)", tg.Name, got, err)
		}
	}
	stillPaused(t, ctx, ts)
}
