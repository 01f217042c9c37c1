package checker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockcheck/lockcheck/history"
)

// b builds a hand-written history; times are in milliseconds.
type b struct{ ops []history.Op }

func (h *b) op(ms float64, p int, typ history.Type, f, lock string, mods ...func(*history.Op)) *b {
	op := history.Op{Index: int64(len(h.ops)), Time: int64(ms * 1e6), Process: p, Type: typ, F: f, Lock: lock}
	for _, m := range mods {
		m(&op)
	}
	h.ops = append(h.ops, op)
	return h
}

func lease(ms int64) func(*history.Op) { return func(o *history.Op) { o.LeaseMS = ms } }
func val(v any) func(*history.Op) {
	return func(o *history.Op) { o.Value, _ = json.Marshal(v) }
}

const (
	I = history.Invoke
	K = history.OK
	F = history.Fail
	N = history.Info
)

// list returns the ops ordered by time (stable) and numbered.
func (h *b) list() []history.Op {
	sort.SliceStable(h.ops, func(i, j int) bool { return h.ops[i].Time < h.ops[j].Time })
	for i := range h.ops {
		h.ops[i].Index = int64(i)
	}
	return h.ops
}

// end appends a nemesis line that marks the end of the history.
func (h *b) end(ms float64) *b { return h.op(ms, -1, N, "end", "") }

// hold appends acquire ok at [t, t+1], release at [t+d, t+d+1].
func (h *b) hold(p int, lock string, t, d float64, leaseMS int64) *b {
	return h.op(t, p, I, "acquire", lock).op(t+1, p, K, "acquire", lock, lease(leaseMS)).
		op(t+d, p, I, "release", lock).op(t+d+1, p, K, "release", lock)
}

func meta(p history.Promise) func(*history.Op) {
	return val(history.Meta{Test: "t", Promise: p})
}

func kinds(as []Anomaly) string {
	var k []string
	for _, a := range as {
		k = append(k, a.Kind)
	}
	return strings.Join(k, ",")
}

func checkVerdict(res Result, name string) Verdict {
	for _, c := range res.Checks {
		if c.Name == name {
			return c.Verdict
		}
	}
	return "missing"
}

func TestRules(t *testing.T) {
	tests := []struct {
		name      string
		h         *b
		verdict   Verdict
		mutex     Verdict
		linear    Verdict
		resource  Verdict
		anomalies string // kinds, in order
		findings  string
	}{
		{
			name: "two holds one after another, adds and final read",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(1000)).
				op(2, 0, I, "add", "l", val(1)).op(3, 0, K, "add", "l", val(1)).
				op(4, 0, I, "release", "l").op(5, 0, K, "release", "l").
				op(6, 1, I, "acquire", "l").op(7, 1, K, "acquire", "l", lease(1000)).
				op(8, 1, I, "add", "l", val(2)).op(9, 1, K, "add", "l", val(2)).
				op(10, 1, I, "release", "l").op(11, 1, K, "release", "l").
				op(12, 2, I, "read", "l").op(13, 2, K, "read", "l", val([]int{1, 2})),
			verdict: Valid, mutex: Valid, linear: Valid, resource: Valid,
		},
		{
			name:    "overlapping holds",
			h:       (&b{}).hold(0, "l", 0, 10, 0).hold(1, "l", 5, 10, 0),
			verdict: Invalid, mutex: Invalid, linear: Invalid, resource: Valid,
			anomalies: "overlapping-holds,non-linearizable",
		},
		{
			name:    "other locks do not conflict",
			h:       (&b{}).hold(0, "a", 0, 10, 0).hold(1, "b", 5, 10, 0),
			verdict: Valid, mutex: Valid, linear: Valid, resource: Valid,
		},
		{
			name: "lease expired before the next acquire",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(10)).
				op(20, 1, I, "acquire", "l").op(21, 1, K, "acquire", "l", lease(10)),
			verdict: Valid, mutex: Valid, linear: Valid, resource: Valid,
		},
		{
			name: "acquire while the lease is still valid",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(10)).
				op(5, 1, I, "acquire", "l").op(6, 1, K, "acquire", "l", lease(10)).end(20),
			verdict: Invalid, mutex: Invalid, linear: Invalid, resource: Valid,
			anomalies: "overlapping-holds,non-linearizable",
		},
		{
			name: "renew extends the lease",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(10)).
				op(8, 0, I, "renew", "l").op(9, 0, K, "renew", "l", lease(10)).
				op(15, 1, I, "acquire", "l").op(16, 1, K, "acquire", "l", lease(10)).end(20),
			verdict: Invalid, mutex: Invalid, linear: Invalid, resource: Valid,
			anomalies: "overlapping-holds,non-linearizable",
		},
		{
			name: "renew without lease_ms keeps the grant's lease",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(10)).
				op(8, 0, I, "renew", "l").op(9, 0, K, "renew", "l").
				op(20, 1, I, "acquire", "l").op(21, 1, K, "acquire", "l", lease(10)),
			verdict: Valid, mutex: Valid, linear: Valid, resource: Valid,
		},
		{
			name: "release ok by a process that does not hold the lock",
			h: (&b{}).hold(0, "l", 0, 10, 0).
				op(20, 1, I, "release", "l").op(21, 1, K, "release", "l"),
			verdict: Invalid, mutex: Valid, linear: Invalid, resource: Valid,
			anomalies: "non-linearizable",
		},
		{
			name: "release ok after the lease ran out, nobody else acquired",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(10)).
				op(30, 0, I, "release", "l").op(31, 0, K, "release", "l"),
			verdict: Valid, mutex: Valid, linear: Valid, resource: Valid,
		},
		{
			name: "release ok after another process took the expired lock",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(10)).
				op(20, 1, I, "acquire", "l").op(21, 1, K, "acquire", "l", lease(100)).
				op(30, 0, I, "release", "l").op(31, 0, K, "release", "l"),
			verdict: Invalid, mutex: Valid, linear: Invalid, resource: Valid,
			anomalies: "non-linearizable",
		},
		{
			name: "re-acquire after the lease ran out and another process held the lock in between",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(10)).
				hold(1, "l", 20, 10, 10).
				op(40, 0, I, "acquire", "l").op(41, 0, K, "acquire", "l", lease(10)).end(60),
			verdict: Valid, mutex: Valid, linear: Valid, resource: Valid,
		},
		{
			name: "renew ok after the lease ran out: a new hold from its return",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(10)).
				hold(1, "l", 20, 10, 10).
				op(40, 0, I, "renew", "l").op(41, 0, K, "renew", "l", lease(10)).
				op(45, 2, I, "acquire", "l").op(46, 2, K, "acquire", "l", lease(10)).end(60),
			verdict: Invalid, mutex: Invalid, linear: Invalid, resource: Valid,
			anomalies: "overlapping-holds,non-linearizable",
		},
		{
			name: "an acquire that returns late cannot take effect before an earlier-returning acquire that needs it",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(10)).
				op(2, 1, I, "acquire", "l").op(20, 1, K, "acquire", "l", lease(1)).
				op(4, 2, I, "acquire", "l").op(6, 2, K, "acquire", "l", lease(10)).end(30),
			verdict: Invalid, mutex: Invalid, linear: Invalid, resource: Valid,
			anomalies: "overlapping-holds,non-linearizable",
		},
		{
			name: "info acquire may never have taken effect",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, N, "acquire", "l").
				hold(1, "l", 2, 10, 0),
			verdict: Valid, mutex: Valid, linear: Valid, resource: Valid,
		},
		{
			name: "info release may have freed the lock",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").
				op(5, 0, I, "release", "l").op(6, 0, N, "release", "l").
				hold(1, "l", 7, 10, 0),
			verdict: Valid, mutex: Valid, linear: Valid, resource: Valid,
		},
		{
			name: "failed release left the lock held",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").
				op(5, 0, I, "release", "l").op(6, 0, F, "release", "l").
				hold(1, "l", 7, 10, 0),
			verdict: Invalid, mutex: Valid, linear: Invalid, resource: Valid,
			anomalies: "non-linearizable",
		},
		{
			name: "failed acquire did not happen",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").
				op(2, 1, I, "acquire", "l").op(3, 1, F, "acquire", "l"),
			verdict: Valid, mutex: Valid, linear: Valid, resource: Valid,
		},
		{
			name: "killed run: invocations without completion",
			h: (&b{}).hold(0, "l", 0, 10, 0).op(20, 1, I, "acquire", "l").op(21, 2, I, "release", "l").
				op(22, 3, I, "add", "l", val(9)),
			verdict: Valid, mutex: Valid, linear: Valid, resource: Valid,
		},
		{
			name: "hold until the end of the history overlaps",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").
				op(5, 1, I, "acquire", "l").op(6, 1, K, "acquire", "l").end(7),
			verdict: Invalid, mutex: Invalid, linear: Invalid, resource: Valid,
			anomalies: "overlapping-holds,non-linearizable",
		},
		{
			name: "lost add",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").
				op(2, 0, I, "add", "l", val(1)).op(3, 0, K, "add", "l", val(1)).
				op(4, 0, I, "add", "l", val(2)).op(5, 0, K, "add", "l", val(2)).
				op(6, 0, I, "release", "l").op(7, 0, K, "release", "l").
				op(8, 1, I, "read", "l").op(9, 1, K, "read", "l", val([]int{2})),
			verdict: Invalid, mutex: Valid, linear: Valid, resource: Invalid,
			anomalies: "lost-add",
		},
		{
			name: "the last ok read is the final read",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").
				op(2, 0, I, "add", "l", val(1)).op(3, 0, K, "add", "l", val(1)).
				op(4, 0, I, "release", "l").op(5, 0, K, "release", "l").
				op(8, 1, I, "read", "l").op(9, 1, K, "read", "l", val([]int{1})).
				op(10, 1, I, "read", "l").op(11, 1, K, "read", "l", val([]int{})),
			verdict: Invalid, mutex: Valid, linear: Valid, resource: Invalid,
			anomalies: "lost-add",
		},
		{
			name: "info add may be missing, add concurrent with the final read may be missing",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").
				op(2, 0, I, "add", "l", val(1)).op(3, 0, N, "add", "l", val(1)).
				op(4, 1, I, "read", "l").
				op(5, 2, I, "acquire", "l").op(6, 2, F, "acquire", "l").
				op(8, 1, K, "read", "l", val([]int{})),
			verdict: Valid, mutex: Valid, linear: Valid, resource: Valid,
			findings: "stuck-lock", // process 0 ended holding l with no lease
		},
		{
			name: "duplicate element",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").
				op(2, 0, I, "add", "l", val(1)).op(3, 0, K, "add", "l", val(1)).
				op(6, 0, I, "release", "l").op(7, 0, K, "release", "l").
				op(8, 1, I, "read", "l").op(9, 1, K, "read", "l", val([]int{1, 1})),
			verdict: Invalid, mutex: Valid, linear: Valid, resource: Invalid,
			anomalies: "duplicate-element",
		},
		{
			name: "failed add present and phantom element",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").
				op(2, 0, I, "add", "l", val(1)).op(3, 0, F, "add", "l", val(1)).
				op(6, 0, I, "release", "l").op(7, 0, K, "release", "l").
				op(8, 1, I, "read", "l").op(9, 1, K, "read", "l", val([]int{1, 7})),
			verdict: Invalid, mutex: Valid, linear: Valid, resource: Invalid,
			anomalies: "failed-add-present,phantom-element",
		},
		{
			name: "stale-holder write after another process acquired",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(10)).
				op(5, 0, I, "add", "l", val(1)).
				op(15, 1, I, "acquire", "l").op(16, 1, K, "acquire", "l", lease(100)).
				op(30, 0, K, "add", "l", val(1)).
				op(40, 2, I, "read", "l").op(41, 2, K, "read", "l", val([]int{1})),
			verdict: Invalid, mutex: Valid, linear: Valid, resource: Invalid,
			anomalies: "stale-holder-write",
		},
		{
			name: "add outlived the lease, nobody else acquired: a finding",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(10)).
				op(5, 0, I, "add", "l", val(1)).op(30, 0, K, "add", "l", val(1)).
				op(40, 2, I, "read", "l").op(41, 2, K, "read", "l", val([]int{1})),
			verdict: Valid, mutex: Valid, linear: Valid, resource: Valid,
			findings: "late-write",
		},
		{
			name: "add by a process that never held the lock",
			h: (&b{}).op(5, 0, I, "add", "l", val(1)).op(6, 0, K, "add", "l", val(1)).
				op(40, 2, I, "read", "l").op(41, 2, K, "read", "l", val([]int{1})),
			verdict: Invalid, mutex: Valid, linear: Valid, resource: Invalid,
			anomalies: "stale-holder-write",
		},
		{
			name: "add after the release",
			h: (&b{}).hold(0, "l", 0, 5, 0).hold(1, "l", 10, 20, 0).
				op(12, 0, I, "add", "l", val(1)).op(13, 0, K, "add", "l", val(1)).
				op(40, 2, I, "read", "l").op(41, 2, K, "read", "l", val([]int{1})),
			verdict: Invalid, mutex: Valid, linear: Valid, resource: Invalid,
			anomalies: "stale-holder-write",
		},
		{
			name: "acknowledged adds without a final read",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").
				op(2, 0, I, "add", "l", val(1)).op(3, 0, K, "add", "l", val(1)),
			verdict: Unknown, mutex: Valid, linear: Valid, resource: Unknown,
		},
		{
			name: "fenced promise: overlapping holds are findings",
			h: (&b{}).op(0, -1, N, "meta", "", meta(history.PromiseFenced)).
				hold(0, "l", 0, 10, 0).hold(1, "l", 5, 10, 0),
			verdict: Valid, mutex: Invalid, linear: Invalid, resource: Valid,
			findings: "overlapping-holds,non-linearizable",
		},
		{
			name: "fenced promise: a lost add still fails",
			h: (&b{}).op(0, -1, N, "meta", "", meta(history.PromiseFenced)).
				op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").
				op(2, 0, I, "add", "l", val(1)).op(3, 0, K, "add", "l", val(1)).
				op(8, 1, I, "read", "l").op(9, 1, K, "read", "l", val([]int{})),
			verdict: Invalid, mutex: Valid, linear: Valid, resource: Invalid,
			anomalies: "lost-add",
		},
		{
			name: "fenced promise: a write acknowledged late, before the newer holder wrote, is a finding",
			h: (&b{}).op(0, -1, N, "meta", "", meta(history.PromiseFenced)).
				op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(10)).
				op(5, 0, I, "add", "l", val(1)).
				op(15, 1, I, "acquire", "l").op(16, 1, K, "acquire", "l", lease(100)).
				op(20, 1, I, "add", "l", val(2)).
				op(30, 0, K, "add", "l", val(1)).
				op(31, 1, K, "add", "l", val(2)).
				op(40, 2, I, "read", "l").op(41, 2, K, "read", "l", val([]int{1, 2})),
			verdict: Valid, mutex: Valid, linear: Valid, resource: Valid,
			findings: "late-write",
		},
		{
			name: "fenced promise: a write invoked after a newer holder's write returned is stale",
			h: (&b{}).op(0, -1, N, "meta", "", meta(history.PromiseFenced)).
				op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(10)).
				op(15, 1, I, "acquire", "l").op(16, 1, K, "acquire", "l", lease(100)).
				op(20, 1, I, "add", "l", val(2)).op(21, 1, K, "add", "l", val(2)).
				op(25, 0, I, "add", "l", val(1)).op(30, 0, K, "add", "l", val(1)).
				op(40, 2, I, "read", "l").op(41, 2, K, "read", "l", val([]int{1, 2})),
			verdict: Invalid, mutex: Valid, linear: Valid, resource: Invalid,
			anomalies: "stale-holder-write",
		},
		{
			name: "mutex promise judges everything",
			h: (&b{}).op(0, -1, N, "meta", "", meta(history.PromiseMutex)).
				hold(0, "l", 0, 10, 0).hold(1, "l", 5, 10, 0),
			verdict: Invalid, mutex: Invalid, linear: Invalid, resource: Valid,
			anomalies: "overlapping-holds,non-linearizable",
		},
		{
			name: "completions may omit the lock",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "").
				op(2, 1, I, "acquire", "l").op(3, 1, K, "acquire", "").
				op(4, 0, I, "release", "l").op(5, 0, K, "release", "").end(6),
			verdict: Invalid, mutex: Invalid, linear: Invalid, resource: Valid,
			anomalies: "overlapping-holds,non-linearizable",
		},
		{
			name: "nemesis events are ignored",
			h: (&b{}).op(0, -1, N, "start-partition", "", val([]string{"n1"})).hold(0, "l", 0, 10, 0).
				op(11, -1, N, "stop-partition", ""),
			verdict: Valid, mutex: Valid, linear: Valid, resource: Valid,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Check(context.Background(), tt.h.list())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]Verdict{CheckMutex: tt.mutex, CheckLinear: tt.linear, CheckResource: tt.resource}
			for name, want := range got {
				if v := checkVerdict(res, name); v != want {
					t.Errorf("%s: %s, want %s (%+v)", name, v, want, res.Checks)
				}
			}
			if res.Verdict != tt.verdict {
				t.Errorf("verdict %s, want %s", res.Verdict, tt.verdict)
			}
			if k := kinds(res.Anomalies); k != tt.anomalies {
				t.Errorf("anomalies %q, want %q", k, tt.anomalies)
			}
			if k := kinds(res.Findings); k != tt.findings {
				t.Errorf("findings %q, want %q", k, tt.findings)
			}
			for _, a := range append(res.Anomalies, res.Findings...) {
				if a.Lock == "" || len(a.Processes) == 0 || len(a.Ops) == 0 || a.End < a.Start || a.Message == "" {
					t.Errorf("anomaly lacks lock, processes, ops or window: %+v", a)
				}
			}
		})
	}
}

func TestOverlapNamesLockProcessesAndWindow(t *testing.T) {
	h := (&b{}).hold(3, "x", 0, 10, 0).hold(7, "x", 5, 10, 0)
	res, err := Check(context.Background(), h.list())
	if err != nil {
		t.Fatal(err)
	}
	a := res.Anomalies[0]
	// 3 holds [1, 10), 7 holds [6, 15): overlap [6, 10) ms.
	if a.Lock != "x" || fmt.Sprint(a.Processes) != "[3 7]" || a.Start != 6e6 || a.End != 10e6 {
		t.Fatalf("anomaly %+v", a)
	}
}

func TestHolds(t *testing.T) {
	h := (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(10)).
		op(2, 1, I, "acquire", "l").op(3, 1, K, "acquire", "l").
		op(5, 1, I, "release", "l").op(6, 1, K, "release", "l").
		op(7, 2, I, "acquire", "m").op(8, 2, K, "acquire", "m").
		op(20, -1, N, "stop", "")
	got := Holds(h.list())
	want := []Hold{
		{Lock: "l", Process: 0, Start: 1e6, End: 10e6, Ended: "expired"},
		{Lock: "l", Process: 1, Start: 3e6, End: 5e6, Ended: "release"},
		{Lock: "m", Process: 2, Start: 8e6, End: 20e6, Ended: "end"},
	}
	if len(got) != len(want) {
		t.Fatalf("holds %+v", got)
	}
	for i := range want {
		g := got[i]
		if g.Lock != want[i].Lock || g.Process != want[i].Process || g.Start != want[i].Start || g.End != want[i].End || g.Ended != want[i].Ended {
			t.Errorf("hold %d = %+v, want %+v", i, g, want[i])
		}
	}
}

func TestInvalidInputRefused(t *testing.T) {
	h := (&b{}).op(0, 0, K, "acquire", "l")
	if _, err := Check(context.Background(), h.list()); err == nil {
		t.Fatal("Check accepted a completion without invoke")
	}
}

func TestTimeoutGivesUnknown(t *testing.T) {
	h := (&b{}).hold(0, "l", 0, 10, 0).hold(1, "l", 20, 10, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Check(ctx, h.list())
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Unknown || checkVerdict(res, CheckLinear) != Unknown {
		t.Fatalf("verdict %s, checks %+v", res.Verdict, res.Checks)
	}
}

// randomLockHistory is a small random history on one lock with concurrent
// clients whose outcomes are random: most are not linearizable, some are.
func randomLockHistory(r *rand.Rand, clients, steps int) []history.Op {
	bb := &b{}
	type st struct {
		open bool
		f    string
	}
	procs := make([]int, clients)
	for i := range procs {
		procs[i] = i
	}
	state := make([]st, clients)
	holding := make([]bool, clients)
	next := clients
	t := 0.0
	for range steps {
		t += r.Float64() * 3
		c := r.IntN(clients)
		p := procs[c]
		if !state[c].open {
			f := "acquire"
			if holding[c] {
				f = []string{"release", "renew"}[r.IntN(2)]
			}
			bb.op(t, p, I, f, "l")
			state[c] = st{true, f}
			continue
		}
		f := state[c].f
		state[c].open = false
		switch x := r.IntN(10); {
		case x < 6:
			bb.op(t, p, K, f, "l", lease(int64(r.IntN(8))))
			holding[c] = f != "release"
		case x < 9:
			bb.op(t, p, F, f, "l")
		default:
			bb.op(t, p, N, f, "l")
			procs[c] = next
			next++
			holding[c] = false
		}
	}
	return bb.ops
}

// Cutting a lock's history into pieces must not change the verdict.
func TestPiecesGiveTheSameVerdictAsWholePorcupine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	counts := map[Verdict]int{}
	for i := range 400 {
		ops := randomLockHistory(r, 1+r.IntN(4), 10+r.IntN(60))
		whole, err := Check(context.Background(), ops, WithSegmentMin(0))
		if err != nil {
			for _, op := range ops {
				t.Log(op)
			}
			t.Fatal(err)
		}
		cut, err := Check(context.Background(), ops, WithSegmentMin(1))
		if err != nil {
			t.Fatal(err)
		}
		w, c := checkVerdict(whole, CheckLinear), checkVerdict(cut, CheckLinear)
		if w != c {
			t.Fatalf("history %d: whole %s, in pieces %s\n%v", i, w, c, ops)
		}
		counts[w]++
	}
	if counts[Valid] < 20 || counts[Invalid] < 20 {
		t.Fatalf("random histories not diverse enough: %v", counts)
	}
	t.Logf("verdicts: %v", counts)
}

func TestStats(t *testing.T) {
	h := (&b{}).hold(0, "l", 0, 10, 0).op(20, 1, I, "acquire", "l").op(22, 1, F, "acquire", "l").
		op(30, 2, I, "acquire", "l").op(31, 2, N, "acquire", "l").op(32, 3, I, "acquire", "l")
	res, err := Check(context.Background(), h.list(), WithTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	acq := res.Stats.ByF["acquire"]
	if acq != (Counts{OK: 1, Fail: 1, Info: 1, Pending: 1}) {
		t.Fatalf("acquire counts %+v", acq)
	}
	if l := res.Stats.LatencyAll["acquire"]; l.Count != 3 || l.Max != 2 {
		t.Fatalf("acquire latency %+v", l)
	}
	if res.Stats.ByProcess[1].Fail != 1 || res.Pending != 1 {
		t.Fatalf("by process %+v, pending %d", res.Stats.ByProcess, res.Pending)
	}
}

// referenceLinearizable checks one lock's history with plain porcupine and a
// nondeterministic model that keeps every info op (acquire, renew, release)
// as "took effect at some point after its invocation, or never": the model
// the checker simplifies by dropping info acquires and renews and closing
// info releases' windows.
func referenceLinearizable(ops []history.Op) bool {
	return referenceCheck(ops, 0) == porcupine.Ok
}

func referenceCheck(ops []history.Op, timeout time.Duration) porcupine.CheckResult {
	return referenceCheckFails(ops, timeout, false)
}

// referenceCheckFails, with withFails, also gives porcupine the failed ops
// (as ops without effect), as a naive use of porcupine would.
func referenceCheckFails(ops []history.Op, timeout time.Duration, withFails bool) porcupine.CheckResult {
	calls := pairCalls(ops)
	var hist []porcupine.Operation
	for i := range calls {
		c := &calls[i]
		if c.lock == "" {
			continue
		}
		if c.typ == history.Fail {
			if withFails && (c.f == "acquire" || c.f == "renew" || c.f == "release") {
				hist = append(hist, porcupine.Operation{ClientId: c.proc, Call: c.inv, Return: c.ret, Input: &lockOp{kind: 'f'}})
			}
			continue
		}
		var kind byte
		switch c.f {
		case "acquire":
			kind = 'a'
		case "renew":
			kind = 'n'
		case "release":
			kind = 'r'
		default:
			continue
		}
		ret := c.ret
		if c.typ != history.OK {
			ret = Never
		}
		hist = append(hist, porcupine.Operation{ClientId: c.proc, Call: c.inv, Return: ret,
			Input: &lockOp{kind: kind, proc: c.proc, inv: c.inv, ret: ret, exp: expiry(c.inv, c.leaseMS), info: c.typ != history.OK}})
	}
	m := porcupine.NondeterministicModel{
		Init: func() []any { return []any{free} },
		Step: func(state, input, output any) []any {
			in := input.(*lockOp)
			if in.kind == 'f' {
				return []any{state} // did not happen
			}
			ok, next := lockStep(state, &lockOp{kind: in.kind, proc: in.proc, inv: in.inv, ret: in.ret, exp: in.exp}, output)
			switch {
			case in.info && ok:
				return []any{state, next}
			case in.info:
				return []any{state}
			case ok:
				return []any{next}
			}
			return nil
		},
	}
	return porcupine.CheckOperationsTimeout(m.ToModel(), hist, timeout)
}

// The checker's model (info acquires and renews dropped, info releases'
// windows closed) must agree with the full nondeterministic model.
func TestModelAgreesWithFullNondeterministicModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	counts := map[bool]int{}
	for i := range 400 {
		ops := randomLockHistory(r, 1+r.IntN(4), 10+r.IntN(50))
		res, err := Check(context.Background(), ops)
		if err != nil {
			t.Fatal(err)
		}
		want := referenceLinearizable(ops)
		if got := checkVerdict(res, CheckLinear) == Valid; got != want {
			for _, op := range ops {
				t.Log(op)
			}
			t.Fatalf("history %d: checker says linearizable=%v, full model %v", i, got, want)
		}
		counts[want]++
	}
	t.Logf("linearizable: %v", counts)
}

// A non-linearizable anomaly is narrowed to the smallest failing piece and
// shows the op that left the lock in the state the piece starts from.
func TestNonLinearizableNarrowedWithItsCause(t *testing.T) {
	h := (&b{}).hold(0, "l", 0, 5, 0).hold(1, "l", 10, 10, 0).hold(2, "l", 30, 10, 0).
		op(50, 3, I, "acquire", "l").op(51, 3, K, "acquire", "l").
		op(60, 4, I, "acquire", "l").op(61, 4, K, "acquire", "l").end(70)
	res, err := Check(context.Background(), h.list())
	if err != nil {
		t.Fatal(err)
	}
	var a *Anomaly
	for i := range res.Anomalies {
		if res.Anomalies[i].Kind == KindNonLinearizable {
			a = &res.Anomalies[i]
		}
	}
	if a == nil {
		t.Fatalf("no non-linearizable anomaly: %+v", res.Anomalies)
	}
	if !strings.Contains(a.Message, "the operation on lock") || !strings.Contains(a.Message, "owned by p3") {
		t.Errorf("message %q", a.Message)
	}
	if len(a.Ops) != 4 || a.Ops[0].Process != 3 || a.Ops[2].Process != 4 || a.Start != 60e6 {
		t.Errorf("ops %+v, window %d-%d", a.Ops, a.Start, a.End)
	}
}

// FuzzCheck: no history the reader accepts makes a checker panic.
func FuzzCheck(f *testing.F) {
	f.Add([]byte(`{"index":0,"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}
{"index":1,"time":5,"process":0,"type":"ok","f":"acquire","lock":"l","lease_ms":1}
{"index":2,"time":6,"process":1,"type":"invoke","f":"add","lock":"l","value":{"a":1}}
{"index":3,"time":7,"process":1,"type":"ok","f":"add","lock":"l"}
{"index":4,"time":8,"process":2,"type":"invoke","f":"read","lock":"l"}
{"index":5,"time":9,"process":2,"type":"ok","f":"read","lock":"l","value":"x"}
{"index":6,"time":9,"process":3,"type":"invoke","f":"release","lock":"l"}
{"index":7,"time":10,"process":3,"type":"info","f":"release","lock":"l"}
`))
	f.Add([]byte(`{"index":0,"time":0,"process":-1,"type":"info","f":"start-x"}
{"index":1,"time":0,"process":0,"type":"invoke","f":"renew","lock":"l"}
{"index":2,"time":0,"process":0,"type":"ok","f":"renew","lock":"","lease_ms":9223372036854}
`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ops, err := history.ReadAll(bytes.NewReader(b))
		if err != nil {
			return
		}
		if _, err := Check(context.Background(), ops, WithSegmentMin(1)); err != nil {
			t.Fatalf("Check refused what the reader accepted: %v", err)
		}
		_ = Holds(ops)
	})
}

// A history the lock model accepts has no overlapping holds: an acquire
// linearized after another process's grant takes effect after that grant's
// release or expiry, so the holds (which end at the release's invocation or
// the expiry and start at the acquire's return) are disjoint.
func TestLinearizableImpliesMutualExclusion(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 1000 {
		ops := randomLockHistory(r, 1+r.IntN(5), 10+r.IntN(60))
		res, err := Check(context.Background(), ops)
		if err != nil {
			t.Fatal(err)
		}
		if checkVerdict(res, CheckLinear) == Valid && checkVerdict(res, CheckMutex) != Valid {
			for _, op := range ops {
				t.Log(op)
			}
			t.Fatalf("history %d: linearizable, but %+v", i, res.Anomalies)
		}
	}
}

// TestAnomalyShowsTheHistorysLines: a call keeps only part of its lines, so
// the lines an anomaly shows are rebuilt: they must be the history's own,
// field for field (a completion that left its lock out stays without it).
func TestAnomalyShowsTheHistorysLines(t *testing.T) {
	node := func(n string) func(*history.Op) { return func(o *history.Op) { o.Node = n } }
	noLock := func(o *history.Op) { o.Lock = "" }
	h := (&b{}).op(0, 3, I, "acquire", "x", node("n1")).op(1, 3, K, "acquire", "x", lease(10), val(4), noLock).
		op(2, 7, I, "acquire", "x").op(3, 7, K, "acquire", "x", node("n2"), val(5)).
		op(20, 3, I, "release", "x").op(21, 3, F, "release", "x", noLock, func(o *history.Op) { o.Error = "timed out" }).
		op(22, 7, I, "release", "x").op(23, 7, K, "release", "x")
	ops := h.list()
	res, err := Check(context.Background(), ops)
	if err != nil {
		t.Fatal(err)
	}
	var overlap *Anomaly
	for i := range res.Anomalies {
		if res.Anomalies[i].Kind == KindOverlap {
			overlap = &res.Anomalies[i]
		}
	}
	if overlap == nil {
		t.Fatalf("no overlap among %s", kinds(res.Anomalies))
	}
	if len(overlap.Ops) == 0 {
		t.Fatal("the overlap shows no lines")
	}
	for _, got := range overlap.Ops {
		want := ops[got.Index]
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Errorf("line %d shown as\n  %+v\nwant\n  %+v", got.Index, got, want)
		}
	}
}
