package nemesis

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// fastStalls are stalls short enough for the fake runs' 10 ms windows.
var fastStalls = Slowness{StallMin: time.Millisecond, StallMax: 4 * time.Millisecond, StallEvery: 2 * time.Millisecond}

// The fake node's slowness actions keep the state a Docker node would.
func (f *fakeNode) SetCPUQuota(ctx context.Context, share float64) error {
	return f.set(fmt.Sprintf("cpu %g", share), true, func() { f.cpu = share })
}
func (f *fakeNode) CPUQuota(ctx context.Context) (float64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cpu, nil
}
func (f *fakeNode) StallJVM(ctx context.Context, d time.Duration) error {
	err := f.set("stall "+d.String(), !f.killed && !f.paused, func() { f.stopped = true })
	if err == nil {
		time.AfterFunc(d, func() {
			f.mu.Lock()
			f.stopped = false
			f.mu.Unlock()
		})
	}
	return err
}
func (f *fakeNode) SetDiskLatency(ctx context.Context, d time.Duration) error {
	return f.set("disk "+d.String(), f.lazy && !f.killed, func() { f.disk = d })
}
func (f *fakeNode) DiskLatency(ctx context.Context) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.disk, nil
}

func TestSlownessValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		s      Slowness
		kinds  []string
		window time.Duration
		bad    string // "" : valid
	}{
		{"defaults", Slowness{}, []string{GCStall}, 10 * time.Second, ""},
		{"defaults, short windows, no stalls", Slowness{}, []string{SlowNode}, time.Second, ""},
		{"default stalls, short windows (fitted)", Slowness{}, []string{GCStall}, time.Second, ""},
		{"stall as long as the windows", Slowness{StallMin: 10 * time.Millisecond, StallMax: 2 * time.Second}, []string{GCStall}, 2 * time.Second, "shorter than the fault windows"},
		{"client stall as long as the windows", Slowness{StallMin: time.Second, StallMax: 3 * time.Second}, []string{ClientGCStall}, 3 * time.Second, "shorter than the fault windows"},
		{"zero quota", Slowness{CPUMin: 0, CPUMax: 0.5}, nil, 0, "slow-node CPU share"},
		{"negative quota", Slowness{CPUMin: -0.1, CPUMax: 0.5}, nil, 0, "slow-node CPU share"},
		{"quota below the kernel's", Slowness{CPUMin: 0.0005, CPUMax: 0.005}, nil, 0, "slow-node CPU share"},
		{"quota above a core", Slowness{CPUMin: 0.5, CPUMax: 2}, nil, 0, "slow-node CPU share"},
		{"inverted quota", Slowness{CPUMin: 0.5, CPUMax: 0.2}, nil, 0, "slow-node CPU share"},
		{"negative stall", Slowness{StallMin: -time.Second, StallMax: time.Second}, nil, 0, "stall -1s..1s"},
		{"inverted stall", Slowness{StallMin: time.Second, StallMax: time.Millisecond}, nil, 0, "stall 1s..1ms"},
		{"negative gap", Slowness{StallEvery: -time.Second}, nil, 0, "stall every"},
		{"negative latency", Slowness{DiskMin: -time.Millisecond, DiskMax: time.Second}, nil, 0, "disk latency"},
		{"inverted latency", Slowness{DiskMin: time.Second, DiskMax: 10 * time.Millisecond}, nil, 0, "disk latency"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Validate(tc.kinds, tc.window)
			switch {
			case tc.bad == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
				t.Fatalf("got %v, want an error naming %q", err, tc.bad)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Fatalf("not one line: %q", err)
			}
		})
	}
}

// A nemesis with bounds that make no sense is refused before anything
// starts, one line.
func TestNewRefusesBadSlowness(t *testing.T) {
	ts, _ := fakeCluster(3)
	_, err := New(ts, &memRec{}, WithKinds(GCStall), WithInterval(time.Second), WithSlowness(Slowness{StallMin: 10 * time.Millisecond, StallMax: 5 * time.Second}))
	if err == nil || !strings.Contains(err.Error(), "shorter than the fault windows") {
		t.Fatalf("got %v", err)
	}
}

// The default stalls fit short windows; given ones are kept.
func TestSlownessFit(t *testing.T) {
	if got := (Slowness{}).Fit(time.Second); got.StallMax != 500*time.Millisecond || got.StallMin != DefaultSlowness.StallMin {
		t.Errorf("defaults in 1s windows: %v..%v", got.StallMin, got.StallMax)
	}
	if got := (Slowness{}).Fit(10 * time.Millisecond); got.StallMax != 5*time.Millisecond || got.StallMin != 5*time.Millisecond {
		t.Errorf("defaults in 10ms windows: %v..%v", got.StallMin, got.StallMax)
	}
	if got := (Slowness{StallMin: time.Millisecond, StallMax: 3 * time.Second}).Fit(time.Second); got.StallMax != 3*time.Second {
		t.Errorf("given stalls changed: %v..%v", got.StallMin, got.StallMax)
	}
}

// A window's stalls fill it: at least one, the first at once, each within
// the bounds, and the same seed draws the same plan.
func TestStallPlan(t *testing.T) {
	s := DefaultSlowness
	for seed := range uint64(50) {
		hold := time.Duration(seed%7+1) * time.Second
		gaps, stalls := stallPlan(rand.New(rand.NewPCG(seed, 1)), s, hold)
		g2, s2 := stallPlan(rand.New(rand.NewPCG(seed, 1)), s, hold)
		if len(stalls) == 0 || len(gaps) != len(stalls) || gaps[0] != 0 {
			t.Fatalf("seed %d: gaps %v stalls %v", seed, gaps, stalls)
		}
		var used time.Duration
		for i, d := range stalls {
			if d < s.StallMin || d > s.StallMax || gaps[i] < 0 || d != s2[i] || gaps[i] != g2[i] {
				t.Fatalf("seed %d: stall %d: gap %v stall %v (bounds %v..%v)", seed, i, gaps[i], d, s.StallMin, s.StallMax)
			}
			used += gaps[i] + d
		}
		if len(stalls) > 1 && used > hold {
			t.Fatalf("seed %d: %v of stalls and gaps in a %v window", seed, used, hold)
		}
	}
}

// Each slowness kind records its parameters, undoes what it did at the stop,
// and a replay of its start line deals the same fault.
func TestSlownessKindsApplyAndHeal(t *testing.T) {
	for _, kind := range []string{SlowNode, CoordSlowNode, GCStall, CoordGCStall, ClientGCStall, SlowDisk} {
		t.Run(kind, func(t *testing.T) {
			ops := runNemesis(t, 300*time.Millisecond, WithKinds(kind), WithSeed(3))
			st := starts(ops)
			if len(st) == 0 {
				t.Fatalf("no %s started: %v", kind, ops)
			}
			for _, op := range st {
				switch kind {
				case SlowNode, CoordSlowNode:
					var v history.SlowNodeStart
					if json.Unmarshal(op.Value, &v) != nil || v.CPU < DefaultSlowness.CPUMin || v.CPU > DefaultSlowness.CPUMax || op.Node == "" {
						t.Errorf("start line %s %s", op.Node, op.Value)
					}
				case GCStall, CoordGCStall:
					var v history.GCStallStart
					if json.Unmarshal(op.Value, &v) != nil || v.MS < 1 || v.MS > 4 || op.Node == "" {
						t.Errorf("start line %s %s", op.Node, op.Value)
					}
					// Aimed: the coordinator of the client holding (the
					// fake clients' 0, pinned to n1, with client 3).
					if kind == CoordGCStall && (op.Node != "n1" || fmt.Sprint(v.Clients) != "[0 3]") {
						t.Errorf("coord-gc-stall aimed at %s %v, want n1 [0 3]", op.Node, v.Clients)
					}
				case ClientGCStall:
					var v history.ClientStallStart
					if json.Unmarshal(op.Value, &v) != nil || v.MS < 1 || v.MS > 4 || v.Lock == "" {
						t.Errorf("start line %s", op.Value)
					}
				case SlowDisk:
					var v history.SlowDiskValue
					if json.Unmarshal(op.Value, &v) != nil || v.LatencyMS < 50 || v.LatencyMS > 500 || op.Node == "" {
						t.Errorf("start line %s %s", op.Node, op.Value)
					}
				}
			}
			// Every start has its stop: a window of one kind at a time.
			open := 0
			for _, op := range ops {
				if k, start, ok := history.FaultEvent(op.F); ok && k == kind {
					if start {
						open++
					} else {
						open--
					}
					if open < 0 || open > 1 {
						t.Fatalf("windows of %s unpaired at %+v", kind, op)
					}
				}
			}
			if open != 0 {
				t.Fatalf("%d windows of %s never stopped", open, kind)
			}
		})
	}
}

// The stop lifts exactly what the start set, and a replayed step sets the
// recorded value on the recorded node.
func TestSlownessReplaysItsValues(t *testing.T) {
	for _, tc := range []struct {
		kind, value, call string
	}{
		{SlowNode, `{"cpu":0.037}`, "cpu 0.037"},
		{SlowDisk, `{"latency_ms":321}`, "disk 321ms"},
		{GCStall, `{"ms":3}`, "stall 3ms"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			ts, fs := fakeCluster(3)
			s := Schedule{Steps: []Step{{Kind: tc.kind, At: 0, For: Duration(5 * time.Millisecond), Nodes: []string{"n2"}, Value: json.RawMessage(tc.value)}}}
			n, err := New(ts, &memRec{}, WithSchedule(s), WithInterval(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			if err := n.Run(ctx); err != nil {
				t.Fatal(err)
			}
			fs[1].mu.Lock()
			calls := strings.Join(fs[1].calls, "; ")
			cpu, disk := fs[1].cpu, fs[1].disk
			fs[1].mu.Unlock()
			if !strings.Contains(calls, tc.call) {
				t.Fatalf("n2's calls %q lack %q", calls, tc.call)
			}
			if cpu != 0 || disk != 0 {
				t.Fatalf("left slow: cpu %g disk %v", cpu, disk)
			}
			for _, f := range []*fakeNode{fs[0], fs[2]} {
				if len(f.calls) > 0 {
					t.Fatalf("%s touched: %v", f.name, f.calls)
				}
			}
		})
	}
}

// Reset asks the node: a quota, a latency or a stopped JVM an earlier
// process left is undone, a healthy node untouched.
func TestSlownessResetAsksTheNode(t *testing.T) {
	ts, fs := fakeCluster(1)
	e := &Env{Targets: ts}
	for _, tc := range []struct {
		inj   Injector
		leave func(f *fakeNode)
		left  func(f *fakeNode) bool
	}{
		{&slowNode{}, func(f *fakeNode) { f.cpu = 0.05 }, func(f *fakeNode) bool { return f.cpu != 0 }},
		{&slowDisk{}, func(f *fakeNode) { f.disk = 200 * time.Millisecond }, func(f *fakeNode) bool { return f.disk != 0 }},
		{&gcStall{}, func(f *fakeNode) { f.stopped = true }, func(f *fakeNode) bool { return f.stopped }},
	} {
		f := fs[0]
		if healed, err := tc.inj.Reset(context.Background(), e, ts[0]); err != nil || healed {
			t.Fatalf("%T on a healthy node: healed %v, %v", tc.inj, healed, err)
		}
		tc.leave(f)
		if healed, err := tc.inj.Reset(context.Background(), e, ts[0]); err != nil || !healed || tc.left(f) {
			t.Fatalf("%T on a slowed node: healed %v, %v; still slow: %v", tc.inj, healed, err, tc.left(f))
		}
	}
}
