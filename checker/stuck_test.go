package checker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

func TestStuckLock(t *testing.T) {
	// grant: process 0 takes l at [0, 1] with the lease given; its add at
	// [2, 3] completes as typ.
	grantOn := func(h *b, leaseMS int64, typ history.Type) *b {
		return h.op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(leaseMS)).
			op(2, 0, I, "add", "l", val(1)).op(3, 0, typ, "add", "l", val(1))
	}
	grant := func(leaseMS int64, typ history.Type) *b { return grantOn(&b{}, leaseMS, typ) }
	tests := []struct {
		name  string
		h     *b
		want  []string // in the finding's message; nil: no finding
		stuck [2]int64 // its window, ms
	}{
		{
			name: "a holder without a lease ended by an unknown add",
			h: grant(0, N).op(10, 1, I, "acquire", "l").op(20, 1, F, "acquire", "l").
				op(30, 2, I, "acquire", "l").op(40, 2, N, "acquire", "l").
				op(50, 3, I, "acquire", "l").op(60, 4, I, "read", "l").op(61, 4, K, "read", "l", val([]int{})).end(100),
			want:  []string{`lock "l" was held for good from 0.003000s`, "97.000ms, 97% of the run", "process 0 ended", "3 later acquires", "0 were granted", "run --retire-stuck moves"},
			stuck: [2]int64{3, 100},
		},
		{
			name: "a later grant to another process is counted (and is an overlap)",
			h:    grant(0, N).op(10, 1, I, "acquire", "l").op(11, 1, K, "acquire", "l").end(100),
			want: []string{"0 later acquires", "1 was granted"}, stuck: [2]int64{3, 100},
		},
		{
			name: "the run moved its clients on",
			h:    grantOn((&b{}).op(0, -1, N, "meta", "", val(history.Meta{Test: "t", Config: map[string]string{history.ConfigRetireStuck: "true"}})), 0, N).end(100),
			want: []string{"no process asked for it after", "the run's clients moved to a fresh lock name"}, stuck: [2]int64{3, 100},
		},
		{
			name: "an acquire waiting since before is not a later one",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").op(2, 1, I, "acquire", "l").
				op(2, 0, I, "add", "l", val(1)).op(3, 0, N, "add", "l", val(1)).op(20, 1, F, "acquire", "l").end(100),
			want: []string{"no process asked for it after"}, stuck: [2]int64{3, 100},
		},
		{name: "a leased grant expires", h: grant(50, N).end(100)},
		{
			name: "a renew without lease_ms keeps the grant's lease",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(50)).op(2, 0, I, "renew", "l").op(3, 0, K, "renew", "l").
				op(4, 0, I, "add", "l", val(1)).op(5, 0, N, "add", "l", val(1)).end(100),
		},
		{name: "a holder that lives to the end is no stuck lock", h: grant(0, K).end(100)},
		{name: "a release in flight may have freed it", h: grant(0, K).op(4, 0, I, "release", "l").op(5, 0, N, "release", "l").end(100)},
		{name: "a killed run's holder never ended", h: grant(0, K).op(4, 0, I, "add", "l", val(2)).end(100)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Check(context.Background(), tt.h.list())
			if err != nil {
				t.Fatal(err)
			}
			var got []Anomaly
			for _, f := range res.Findings {
				if f.Kind == KindStuckLock {
					got = append(got, f)
				}
			}
			if tt.want == nil {
				if len(got) > 0 {
					t.Fatalf("finding %q, want none", got[0].Message)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d stuck-lock findings, want 1 (findings %s)", len(got), kinds(res.Findings))
			}
			f := got[0]
			for _, w := range tt.want {
				if !strings.Contains(f.Message, w) {
					t.Errorf("message %q lacks %q", f.Message, w)
				}
			}
			if f.Lock != "l" || fmt.Sprint(f.Processes) != "[0]" || f.Start != tt.stuck[0]*1e6 || f.End != tt.stuck[1]*1e6 {
				t.Errorf("finding %s %v [%d, %d], want l [0] %v ms", f.Lock, f.Processes, f.Start, f.End, tt.stuck)
			}
			if len(f.Ops) != 4 || f.Ops[1].Type != K || f.Ops[3].Type != N {
				t.Errorf("ops %+v, want the grant and the unknown add", f.Ops)
			}
			if res.Verdict == Invalid && !strings.Contains(tt.name, "overlap") {
				t.Errorf("verdict %s: a stuck lock alone fails nothing", res.Verdict)
			}
		})
	}
}

func TestStuckLockAcrossShards(t *testing.T) {
	// Many locks, so that they spread over the shards; only l3's holder is
	// abandoned.
	h := &b{}
	for i := range 8 {
		l := fmt.Sprintf("l%d", i)
		h.op(float64(i), i, I, "acquire", l).op(float64(i)+0.5, i, K, "acquire", l)
	}
	// Process 3 ends with an unknown add on l3; process 5, holding l5, with
	// an unknown acquire of l6, in another shard than l5's, perhaps.
	h.op(10, 3, I, "add", "l3", val(1)).op(11, 3, N, "add", "l3", val(1)).
		op(12, 9, I, "acquire", "l3").op(13, 9, F, "acquire", "l3").
		op(14, 5, I, "acquire", "l6").op(15, 5, N, "acquire", "l6").end(50)
	res, err := Check(context.Background(), h.list(), WithWorkers(4))
	if err != nil {
		t.Fatal(err)
	}
	var stuck []string
	for _, f := range res.Findings {
		stuck = append(stuck, f.Lock)
	}
	if fmt.Sprint(stuck) != "[l3 l5]" || !strings.Contains(res.Findings[0].Message, "1 later acquire of it") {
		t.Fatalf("findings %+v, want l3 and l5 stuck", res.Findings)
	}
}

func TestLeftWaiting(t *testing.T) {
	stuck := Anomaly{Kind: KindStuckLock, Lock: "l", Start: 10, End: 100}
	tests := []struct {
		name string
		res  Result
		want int
	}{
		{"clients left waiting", Result{Findings: []Anomaly{stuck}}, 1},
		{"clients moved on", Result{Meta: &history.Meta{Config: map[string]string{history.ConfigRetireStuck: "true"}}, Findings: []Anomaly{stuck}}, 0},
		{"granted again: an overlap", Result{Anomalies: []Anomaly{{Kind: KindOverlap, Lock: "l", Start: 20, End: 100}}, Findings: []Anomaly{stuck}}, 0},
		{"granted again under the fenced promise: an overlap finding", Result{Findings: []Anomaly{{Kind: KindOverlap, Lock: "l", Start: 20, End: 100}, stuck}}, 0},
		{"an overlap before it got stuck", Result{Anomalies: []Anomaly{{Kind: KindOverlap, Lock: "l", Start: 2, End: 8}}, Findings: []Anomaly{stuck}}, 1},
		{"an overlap on another lock", Result{Anomalies: []Anomaly{{Kind: KindOverlap, Lock: "m", Start: 20, End: 100}}, Findings: []Anomaly{stuck}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.res.LeftWaiting(); len(got) != tt.want {
				t.Fatalf("%d left waiting, want %d", len(got), tt.want)
			}
		})
	}
}
