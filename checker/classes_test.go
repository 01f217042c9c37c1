package checker

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// The four false-negative classes of issue 12, each with the violation and
// the near misses that must stay valid. Times are in milliseconds.

// grant appends an acquire by p invoked at inv, ok at ret with lease leaseMS
// and, when tok > 0, fencing token tok.
func (h *b) grant(p int, l string, inv, ret float64, leaseMS int64, tok int) *b {
	mods := []func(*history.Op){lease(leaseMS)}
	if tok > 0 {
		mods = append(mods, val(tok))
	}
	return h.op(inv, p, I, "acquire", l).op(ret, p, K, "acquire", l, mods...)
}

// add appends an add of elem by p over [inv, ret] completing as typ.
func (h *b) add(p int, l string, inv, ret float64, elem int, typ history.Type) *b {
	return h.op(inv, p, I, "add", l, val(elem)).op(ret, p, typ, "add", l, val(elem))
}

func (h *b) read(p int, l string, inv, ret float64, elems ...int) *b {
	if elems == nil {
		elems = []int{}
	}
	return h.op(inv, p, I, "read", l).op(ret, p, K, "read", l, val(elems))
}

func (h *b) release(p int, l string, inv, ret float64) *b {
	return h.op(inv, p, I, "release", l).op(ret, p, K, "release", l)
}

func fenced() *b { return (&b{}).op(0, -1, N, "meta", "", meta(history.PromiseFenced)) }

func TestFalseNegativeClasses(t *testing.T) {
	tests := []struct {
		name      string
		h         *b
		verdict   Verdict
		resource  Verdict
		anomalies string // kinds judged, in order
		findings  string
	}{
		// 1. Real-time staleness. p0's grant returns at 15, after its lease
		// (from 0, 10 ms) ran out: its hold is empty. p1 legally acquired at
		// 12 (after the expiry) and holds until 50.
		{
			name: "1: write by a late grant while another process holds the lock",
			h: (&b{}).grant(0, "l", 0, 15, 10, 0).grant(1, "l", 11, 12, 100, 0).
				add(0, "l", 16, 17, 1, K).add(1, "l", 20, 21, 2, K).release(1, "l", 50, 51).
				read(2, "l", 60, 61, 1, 2),
			verdict: Invalid, resource: Invalid, anomalies: "stale-holder-write",
		},
		{
			name: "1: another whole hold inside a write that outlived the writer's lease",
			h: (&b{}).grant(0, "l", 0, 1, 10, 0).op(5, 0, I, "add", "l", val(1)).
				grant(1, "l", 15, 16, 100, 0).release(1, "l", 20, 21).op(40, 0, K, "add", "l", val(1)).
				read(2, "l", 60, 61, 1),
			verdict: Invalid, resource: Invalid, anomalies: "stale-holder-write",
		},
		{
			name: "1 near miss: the other hold ended before the write was invoked",
			h: (&b{}).grant(0, "l", 0, 15, 10, 0).grant(1, "l", 11, 12, 100, 0).release(1, "l", 14, 14.5).
				add(0, "l", 16, 17, 1, K).read(2, "l", 60, 61, 1),
			verdict: Valid, resource: Valid, findings: "late-write",
		},
		{
			name: "1 near miss: the other hold began after the write returned",
			h: (&b{}).grant(0, "l", 0, 15, 10, 0).add(0, "l", 16, 17, 1, K).
				grant(1, "l", 17.5, 18, 100, 0).read(2, "l", 60, 61, 1),
			verdict: Valid, resource: Valid, findings: "late-write",
		},
		{
			name: "1 near miss: the other's lease ran out exactly when the write was invoked",
			h: (&b{}).grant(0, "l", 0, 25, 10, 0).grant(1, "l", 10, 11, 16, 0).
				add(0, "l", 26, 27, 1, K).read(2, "l", 60, 61, 1),
			verdict: Valid, resource: Valid, findings: "late-write",
		},
		{
			name: "1 near miss: a write inside the writer's own hold",
			h: (&b{}).grant(0, "l", 0, 1, 10, 0).add(0, "l", 2, 3, 1, K).release(0, "l", 4, 5).
				grant(1, "l", 6, 7, 10, 0).add(1, "l", 8, 9, 2, K).read(2, "l", 60, 61, 1, 2),
			verdict: Valid, resource: Valid,
		},

		// 2. Fenced promise, tokens. p0 holds token 1, p1 token 2; their
		// holds overlap (a finding under this promise).
		{
			name: "2: token 1 accepted after token 2 was acknowledged, inside an overlapping hold",
			h: fenced().grant(0, "l", 0, 1, 1000, 1).grant(1, "l", 2, 3, 1000, 2).
				add(1, "l", 4, 5, 2, K).add(0, "l", 6, 7, 1, K).
				read(2, "l", 20, 21, 1, 2),
			verdict: Invalid, resource: Invalid, anomalies: "stale-holder-write",
			findings: "overlapping-holds,non-linearizable",
		},
		{
			// Since issue 19 the lock's own fault (its tokens went back) is
			// reported beside the resource's.
			name: "2: a lower token accepted after a higher one although the holds do not overlap",
			h: fenced().grant(0, "l", 0, 1, 1000, 5).add(0, "l", 2, 3, 1, K).release(0, "l", 4, 5).
				grant(1, "l", 6, 7, 1000, 4).add(1, "l", 8, 9, 2, K).release(1, "l", 10, 11).
				read(2, "l", 20, 21, 1, 2),
			verdict: Invalid, resource: Invalid, anomalies: "token-not-increasing,stale-holder-write",
		},
		{
			name: "2: a stale token after the writer's lease ran out",
			h: fenced().grant(0, "l", 0, 1, 10, 1).grant(1, "l", 20, 21, 100, 2).
				add(1, "l", 22, 23, 2, K).add(0, "l", 25, 26, 1, K).
				read(2, "l", 40, 41, 1, 2),
			verdict: Invalid, resource: Invalid, anomalies: "stale-holder-write",
		},
		{
			name: "2 near miss: the stale write was invoked before the newer write returned",
			h: fenced().grant(0, "l", 0, 1, 1000, 1).grant(1, "l", 2, 3, 1000, 2).
				add(1, "l", 4, 6, 2, K).add(0, "l", 5, 7, 1, K).
				read(2, "l", 20, 21, 1, 2),
			verdict: Valid, resource: Valid, findings: "overlapping-holds,non-linearizable",
		},
		{
			name: "2 near miss: the stale write was refused",
			h: fenced().grant(0, "l", 0, 1, 1000, 1).grant(1, "l", 2, 3, 1000, 2).
				add(1, "l", 4, 5, 2, K).add(0, "l", 6, 7, 1, F).
				read(2, "l", 20, 21, 2),
			verdict: Valid, resource: Valid, findings: "overlapping-holds,non-linearizable",
		},
		{
			name: "2 near miss: tokens rise with time",
			h: fenced().grant(0, "l", 0, 1, 1000, 1).add(0, "l", 2, 3, 1, K).release(0, "l", 4, 5).
				grant(1, "l", 6, 7, 1000, 2).add(1, "l", 8, 9, 2, K).add(1, "l", 10, 11, 3, K).
				read(2, "l", 20, 21, 1, 2, 3),
			verdict: Valid, resource: Valid,
		},
		{
			name: "2 near miss: under the mutex promise tokens are not the resource's business",
			h: (&b{}).grant(0, "l", 0, 1, 1000, 5).add(0, "l", 2, 3, 1, K).release(0, "l", 4, 5).
				grant(1, "l", 6, 7, 1000, 4).add(1, "l", 8, 9, 2, K).release(1, "l", 10, 11).
				read(2, "l", 20, 21, 1, 2),
			verdict: Valid, resource: Valid,
		},

		// 3. Every ok read, not only the final one.
		{
			name: "3: a read lacks an add acknowledged before it was invoked (the final read has it)",
			h: (&b{}).grant(0, "l", 0, 1, 1000, 0).add(0, "l", 2, 3, 1, K).release(0, "l", 4, 5).
				read(2, "l", 6, 7).read(3, "l", 8, 9, 1),
			verdict: Invalid, resource: Invalid, anomalies: "lost-add",
		},
		{
			name: "3: a read holds an element whose add was invoked after it returned",
			h: (&b{}).read(2, "l", 0, 1, 1).grant(0, "l", 2, 3, 1000, 0).add(0, "l", 4, 5, 1, K).
				release(0, "l", 6, 7).read(3, "l", 8, 9, 1),
			verdict: Invalid, resource: Invalid, anomalies: "phantom-element",
		},
		{
			name: "3: a read holds an element whose only add was refused",
			h: (&b{}).grant(0, "l", 0, 1, 1000, 0).add(0, "l", 2, 3, 1, F).
				read(2, "l", 4, 5, 1).add(0, "l", 6, 7, 2, K).release(0, "l", 8, 9).read(3, "l", 10, 11, 2),
			verdict: Invalid, resource: Invalid, anomalies: "failed-add-present",
		},
		{
			name: "3: a read holds an element whose add is refused after the read returned",
			h: (&b{}).grant(0, "l", 0, 1, 1000, 0).op(2, 0, I, "add", "l", val(1)).
				read(2, "l", 3, 4, 1).op(5, 0, F, "add", "l", val(1)).release(0, "l", 6, 7).read(3, "l", 10, 11),
			verdict: Invalid, resource: Invalid, anomalies: "failed-add-present",
		},
		{
			name: "3: a read holds an element twice",
			h: (&b{}).grant(0, "l", 0, 1, 1000, 0).add(0, "l", 2, 3, 1, K).release(0, "l", 4, 5).
				read(2, "l", 6, 7, 1, 1).read(3, "l", 8, 9, 1),
			verdict: Invalid, resource: Invalid, anomalies: "duplicate-element",
		},
		{
			name: "3 near miss: a read concurrent with the add may lack it",
			h: (&b{}).grant(0, "l", 0, 1, 1000, 0).op(2, 0, I, "add", "l", val(1)).
				read(2, "l", 2.5, 4).op(3, 0, K, "add", "l", val(1)).release(0, "l", 5, 6).read(3, "l", 8, 9, 1),
			verdict: Valid, resource: Valid,
		},
		{
			name: "3 near miss: a read may hold an element whose add was in flight",
			h: (&b{}).grant(0, "l", 0, 1, 1000, 0).op(2, 0, I, "add", "l", val(1)).
				read(2, "l", 2.5, 4, 1).op(5, 0, K, "add", "l", val(1)).release(0, "l", 6, 7).read(3, "l", 8, 9, 1),
			verdict: Valid, resource: Valid,
		},
		{
			// Issue 19 changed this verdict: once a read has seen an info
			// add's element it is known, and a later read must hold it.
			name: "3: an info add seen by a read, then missing from a later read",
			h: (&b{}).grant(0, "l", 0, 1, 1000, 0).add(0, "l", 2, 3, 1, N).
				read(2, "l", 4, 5, 1).read(3, "l", 6, 7).read(4, "l", 8, 9, 1),
			verdict: Invalid, resource: Invalid, anomalies: "lost-add",
		},
		{
			name: "3 near miss: an info add may or may not show until a read has seen it",
			h: (&b{}).grant(0, "l", 0, 1, 1000, 0).add(0, "l", 2, 3, 1, N).
				read(3, "l", 4, 5).read(2, "l", 6, 7, 1).read(4, "l", 8, 9, 1),
			verdict: Valid, resource: Valid,
		},

		// 4. The final read: an element whose add came only after it is a
		// phantom, not an add.
		{
			name: "4: the final read holds an element whose add was invoked after it returned",
			h: (&b{}).grant(0, "l", 0, 1, 1000, 0).add(0, "l", 2, 3, 1, K).
				read(2, "l", 10, 11, 1, 2).add(0, "l", 12, 13, 2, K).release(0, "l", 14, 15),
			verdict: Invalid, resource: Invalid, anomalies: "phantom-element",
		},
		{
			name: "4 near miss: the add was invoked while the final read ran",
			h: (&b{}).grant(0, "l", 0, 1, 1000, 0).add(0, "l", 2, 3, 1, K).
				op(10, 2, I, "read", "l").op(10.5, 0, I, "add", "l", val(2)).op(11, 2, K, "read", "l", val([]int{1, 2})).
				op(13, 0, K, "add", "l", val(2)).release(0, "l", 14, 15),
			verdict: Valid, resource: Valid,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Check(context.Background(), tt.h.list())
			if err != nil {
				t.Fatal(err)
			}
			if v := checkVerdict(res, CheckResource); v != tt.resource {
				t.Errorf("resource: %s, want %s (%+v)", v, tt.resource, res.Checks)
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
				t.Logf("%s: %s", a.Kind, a.Message)
			}
			// The streamed path (a file read line by line) judges alike.
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			for _, op := range tt.h.list() {
				_ = enc.Encode(op)
			}
			buf.WriteString("\n\n") // trailing blank lines are accepted
			sres, err := CheckReader(context.Background(), &buf)
			if err != nil {
				t.Fatal(err)
			}
			if sres.Verdict != res.Verdict || kinds(sres.Anomalies) != kinds(res.Anomalies) {
				t.Errorf("streamed: %s %q, in memory: %s %q", sres.Verdict, kinds(sres.Anomalies), res.Verdict, kinds(res.Anomalies))
			}
		})
	}
}
