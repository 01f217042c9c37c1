//go:build jepsen

package nemesis_test

import (
	"context"
	"encoding/json"
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

// cpuStat reads the node's cgroup: its CFS quota and how often the kernel
// throttled it (cgroup v1 or v2, as the container sees it).
func cpuStat(t *testing.T, ctx context.Context, n nemesis.Node) (quota string, throttled int) {
	t.Helper()
	out, err := n.Exec(ctx, "sh", "-c", "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.stat 2>/dev/null || cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/cpu.stat")
	if err != nil {
		t.Fatalf("cgroup: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	quota = strings.Fields(lines[0])[0]
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "nr_throttled" {
			throttled, _ = strconv.Atoi(f[1])
		}
	}
	return quota, throttled
}

// busy runs a CPU-bound loop in the node and returns its wall and CPU
// seconds as the node's bash measured them.
func busy(t *testing.T, ctx context.Context, n nemesis.Node) (wall, cpu float64) {
	t.Helper()
	out, err := n.Exec(ctx, "bash", "-c", `TIMEFORMAT='%R %U %S'; time (i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done)`)
	if err != nil {
		t.Fatalf("busy loop: %v", err)
	}
	f := strings.Fields(strings.TrimSpace(out))
	if len(f) != 3 {
		t.Fatalf("time printed %q", out)
	}
	wall, _ = strconv.ParseFloat(f[0], 64)
	u, _ := strconv.ParseFloat(f[1], 64)
	s, _ := strconv.ParseFloat(f[2], 64)
	return wall, u + s
}

// slow-node puts a CFS quota of the drawn share on one node: the kernel
// throttles it, a CPU-bound loop there runs at most at that share (a lower
// bound on its wall time, never an upper one), and the stop and the reset
// lift it.
func TestSlowNodeThrottlesTheNode(t *testing.T) {
	c := clustertest.Get(t)
	ts := targetsOf(c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rec := &nemesis.MemRec{}
	const share = 0.1
	nem, err := nemesis.New(ts, rec, nemesis.WithKinds(nemesis.SlowNode), nemesis.WithSeed(1),
		nemesis.WithSlowness(nemesis.Slowness{CPUMin: share, CPUMax: share}))
	if err != nil {
		t.Fatal(err)
	}
	stop, err := nemesis.StartKind(ctx, nem, 0)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stop(context.Background())
		}
	})
	lines := rec.All()
	if len(lines) != 1 || lines[0].F != history.StartF(nemesis.SlowNode) {
		t.Fatalf("lines %+v", lines)
	}
	var v history.SlowNodeStart
	if err := json.Unmarshal(lines[0].Value, &v); err != nil || v.CPU != share {
		t.Fatalf("start value %s", lines[0].Value)
	}
	node := ts[0].Node
	for _, tg := range ts {
		if tg.Name == lines[0].Node {
			node = tg.Node
		}
	}
	quota, before := cpuStat(t, ctx, node)
	if quota != "10000" { // 0.1 of a 100 ms period, in µs
		t.Fatalf("quota %q under slow-node at %g of a core", quota, share)
	}
	wall, cpu := busy(t, ctx, node)
	_, after := cpuStat(t, ctx, node)
	if after <= before {
		t.Errorf("the kernel never throttled the node (nr_throttled %d -> %d)", before, after)
	}
	// At most share of a core: cpu seconds take at least cpu/share of
	// wall time, less a period's slack at each end.
	if min := cpu/share - 0.2; wall < min {
		t.Errorf("a loop of %.2f s of CPU took %.2f s at %g of a core, want at least %.2f s", cpu, wall, share, min)
	}
	t.Logf("loop: %.2f s CPU in %.2f s under %g of a core; throttled %d times", cpu, wall, share, after-before)
	stopped = true
	if err := stop(ctx); err != nil {
		t.Fatal(err)
	}
	if quota, _ := cpuStat(t, ctx, node); quota != "-1" && quota != "max" {
		t.Errorf("quota %q after the stop, want none", quota)
	}
	// A quota an earlier process left is found and lifted by the reset.
	cn := node.(nemesis.CPUNode)
	if err := cn.SetCPUQuota(ctx, 0.5); err != nil {
		t.Fatal(err)
	}
	// `cluster status` shows it.
	if found, err := node.(*cluster.Node).Faults(ctx); err != nil || !slices.Contains(found, "cpu quota 0.5 of a core") {
		t.Errorf("the node's faults %q (%v) lack its quota", found, err)
	}
	if err := nem.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := cn.CPUQuota(ctx); err != nil || got != 0 {
		t.Errorf("quota %g (%v) after the heal", got, err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
}

// gc-stall stops the JVM for the stall and the node resumes it itself: its
// state reads stopped during the stall, running after, and the node
// answers.
func TestGCStallStopsTheJVM(t *testing.T) {
	c := clustertest.Get(t)
	ts := targetsOf(c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := ts[len(ts)-1]
	rec := &nemesis.MemRec{}
	s := nemesis.Schedule{Steps: []nemesis.Step{{Kind: nemesis.GCStall, For: nemesis.Duration(1500 * time.Millisecond),
		Nodes: []string{node.Name}, Value: json.RawMessage(`{"ms":1500}`)}}}
	nem, err := nemesis.New(ts, rec, nemesis.WithSchedule(s))
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 8*time.Second)
	defer rcancel()
	done := make(chan error, 1)
	go func() { done <- nem.Run(rctx) }()
	sawStopped := false
	for !sawStopped && rctx.Err() == nil {
		out, _ := node.Node.Exec(ctx, "ps", "-o", "stat=", "-C", "java")
		sawStopped = strings.HasPrefix(strings.TrimSpace(out), "T")
		time.Sleep(50 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !sawStopped {
		t.Error("the JVM never read stopped during a 1.5 s stall")
	}
	out, err := node.Node.Exec(ctx, "ps", "-o", "stat=", "-C", "java")
	if err != nil || strings.HasPrefix(strings.TrimSpace(out), "T") {
		t.Fatalf("JVM state %q (%v) after the stall", out, err)
	}
	var stop history.GCStallStop
	lines := rec.All()
	if len(lines) != 2 || lines[1].F != history.StopF(nemesis.GCStall) || json.Unmarshal(lines[1].Value, &stop) != nil || stop.MS != 1500 || stop.StalledMS < 1500 {
		t.Fatalf("lines %+v", lines)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatalf("node does not answer after the stall: %v", err)
	}
}
