package checker

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker/synth"
	"github.com/lockcheck/lockcheck/history"
)

// liveOf checks h with an acquire time-out of acqMS and a stuck bound of
// boundMS and returns its liveness.
func liveOf(t *testing.T, ops []history.Op, acqMS, boundMS int64) *Liveness {
	t.Helper()
	res, err := Check(context.Background(), ops, WithAcquireTimeout(time.Duration(acqMS)*time.Millisecond),
		WithStuckBound(time.Duration(boundMS)*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if res.Liveness == nil {
		t.Fatal("no liveness")
	}
	return res.Liveness
}

// TestAvailabilityArithmetic: unavailable time is the free time before each
// grant beyond the acquire time-out, and the free time at the end beyond
// it, counted from the first ask (a free lock nobody asks for is idle); a
// live holder's time is available (contention), a dead holder's is not.
func TestAvailabilityArithmetic(t *testing.T) {
	// acquire time-out 10 ms throughout.
	tests := []struct {
		name        string
		h           *b
		unavailMS   int64
		spanMS      int64
		wantStuck   int
		grants      int
		availWithin float64 // the availability, within 1e-9
	}{
		{
			name: "grants close together: all available",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").op(2, 0, I, "release", "l").op(3, 0, K, "release", "l").
				op(4, 1, I, "acquire", "l").op(5, 1, K, "acquire", "l").op(6, 1, I, "release", "l").op(7, 1, K, "release", "l"),
			unavailMS: 0, spanMS: 7, grants: 2, availWithin: 1,
		},
		{
			name: "a free gap of 50 ms, asked for from 11 ms: 39 ms beyond the time-out",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").op(2, 0, I, "release", "l").op(10, 0, K, "release", "l").
				op(11, 1, I, "acquire", "l").op(20, 1, F, "acquire", "l").op(21, 1, I, "acquire", "l").op(60, 1, K, "acquire", "l").
				op(61, 1, I, "release", "l").op(62, 1, K, "release", "l"),
			unavailMS: 39, spanMS: 62, grants: 2, availWithin: 1 - 39.0/62,
		},
		{
			name: "a long live hold is contention, not unavailability",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").op(2, 1, I, "acquire", "l").op(12, 1, F, "acquire", "l").
				op(99, 0, I, "release", "l").op(100, 0, K, "release", "l").op(101, 1, I, "acquire", "l").op(102, 1, K, "acquire", "l").
				op(103, 1, I, "release", "l").op(104, 1, K, "release", "l"),
			unavailMS: 0, spanMS: 104, grants: 2, availWithin: 1,
		},
		{
			name: "a lease that runs out frees the lock at its expiry",
			// Holder 0's lease of 20 ms runs from its invocation at 0;
			// process 1 asks from 2 on, the next grant at 80: free and
			// asked for 20..80, 60 ms, 50 beyond.
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(20)).
				op(2, 1, I, "acquire", "l").op(30, 1, F, "acquire", "l").op(31, 2, I, "acquire", "l").op(60, 2, F, "acquire", "l").
				op(61, 1, I, "acquire", "l").op(80, 1, K, "acquire", "l", lease(20)).
				op(81, 1, I, "release", "l").op(82, 1, K, "release", "l"),
			unavailMS: 50, spanMS: 82, grants: 2, availWithin: 1 - 50.0/82,
		},
		{
			// Released, then refused past the bound: a refused period too.
			name: "the free time at the end counts beyond the time-out",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").op(2, 0, I, "release", "l").op(3, 0, K, "release", "l").
				op(4, 1, I, "acquire", "l").op(100, 1, F, "acquire", "l"),
			unavailMS: 86, spanMS: 100, wantStuck: 1, grants: 1, availWithin: 1 - 86.0/100,
		},
		{
			name: "a free lock nobody asks for is idle",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").op(2, 0, I, "release", "l").op(3, 0, K, "release", "l").
				op(4, 1, I, "acquire", "m").op(5, 1, K, "acquire", "m").op(99, 1, I, "release", "m").op(100, 1, K, "release", "m"),
			unavailMS: 0, spanMS: 100, grants: 1, availWithin: 1,
		},
		{
			name: "a holder whose write came back unknown holds it dead to the end",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").op(2, 0, I, "add", "l", val(1)).op(5, 0, N, "add", "l", val(1)).
				op(6, 1, I, "acquire", "l").op(105, 1, F, "acquire", "l"),
			unavailMS: 89, spanMS: 105, wantStuck: 1, grants: 1, availWithin: 1 - 89.0/105,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := liveOf(t, tt.h.list(), 10, 50)
			if len(v.Locks) < 1 || v.Locks[0].Lock != "l" {
				t.Fatalf("locks %+v, want l first", v.Locks)
			}
			l := v.Locks[0]
			if l.UnavailableMS != tt.unavailMS {
				t.Errorf("unavailable %d ms, want %d", l.UnavailableMS, tt.unavailMS)
			}
			if got := (v.End - v.Start) / 1e6; got != tt.spanMS {
				t.Errorf("span %d ms, want %d", got, tt.spanMS)
			}
			if math.Abs(l.Availability-tt.availWithin) > 1e-9 {
				t.Errorf("availability %v, want %v", l.Availability, tt.availWithin)
			}
			if l.Grants != tt.grants {
				t.Errorf("%d grants, want %d", l.Grants, tt.grants)
			}
			if len(l.Stuck) != tt.wantStuck {
				t.Errorf("%d stuck periods, want %d: %+v", len(l.Stuck), tt.wantStuck, l.Stuck)
			}
		})
	}
}

// TestStuckCases: each way a lock is left held with nobody to release it is
// found from the history alone, with the operation that left it held, and
// a lease frees it while the bound is above its TTL.
func TestStuckCases(t *testing.T) {
	grant := func() *b {
		return (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l")
	}
	waiters := func(h *b, from float64) *b {
		return h.op(from, 1, I, "acquire", "l").op(from+10, 1, F, "acquire", "l").op(from+11, 1, I, "acquire", "l").
			op(200, 1, F, "acquire", "l")
	}
	kill := history.ClientKillStart{Client: 0, InFlight: "hold", Lock: "l", Process: 0, RestartMS: 5}
	tests := []struct {
		name   string
		h      *b
		cause  string
		proc   int
		start  int64 // ms
		freed  bool
		noneOK bool // no stuck period
		words  []string
	}{
		{
			name:  "the harness's write came back unknown",
			h:     waiters(grant().op(2, 0, I, "add", "l", val(1)).op(4, 0, N, "add", "l", val(1)), 5),
			cause: CauseWriteUnknown, proc: 0, start: 4,
			words: []string{`lock "l" stuck from 0.004000s`, "write came back unknown", "process 0", "held to the end", "2 acquires asked"},
		},
		{
			name: "an acquire that took effect was answered unknown",
			h: waiters(grant().op(2, 0, I, "release", "l").op(3, 0, K, "release", "l").
				op(4, 2, I, "acquire", "l").op(6, 2, N, "acquire", "l"), 7),
			cause: CauseAcquireUnknown, proc: 2, start: 6, words: []string{"may have taken effect", "process 2 (its acquire)"},
		},
		{
			name:  "a release that did not take effect was answered unknown",
			h:     waiters(grant().op(2, 0, I, "release", "l").op(8, 0, N, "release", "l"), 9),
			cause: CauseReleaseUnknown, proc: 0, start: 8, words: []string{"may not have taken effect", "process 0 (its release)"},
		},
		{
			name: "a holder killed between operations",
			h: waiters(grant().op(3, -1, N, history.StartF(history.KindClientKill), "", val(kill)).
				op(9, -1, N, history.StopF(history.KindClientKill), "", val(history.ClientKillStop{Client: 0, DownMS: 5, Process: 5})), 10),
			cause: CauseKilled, proc: 0, start: 3, words: []string{"killed (client-kill)"},
		},
		{
			name: "a killed acquire in flight is the kill's",
			h: waiters(grant().op(2, 0, I, "release", "l").op(3, 0, K, "release", "l").op(4, 0, I, "acquire", "l").
				op(5, -1, N, history.StartF(history.KindClientKill), "", val(kill)).op(6, 0, N, "acquire", "l"), 7),
			cause: CauseKilled, proc: 0, start: 6,
		},
		{
			name: "a holder with a lease frees at its expiry: not stuck",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(40)).op(2, 0, I, "add", "l", val(1)).op(4, 0, N, "add", "l", val(1)).
				op(5, 1, I, "acquire", "l").op(40, 1, F, "acquire", "l").op(41, 1, I, "acquire", "l").op(42, 1, K, "acquire", "l", lease(40)).
				op(43, 1, I, "release", "l").op(44, 1, K, "release", "l").op(200, 1, I, "acquire", "l").op(201, 1, K, "acquire", "l"),
			noneOK: true,
		},
		{
			name: "freed late by a grant: a stuck period that ended",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").op(2, 0, I, "add", "l", val(1)).op(4, 0, N, "add", "l", val(1)).
				op(5, 1, I, "acquire", "l").op(150, 1, K, "acquire", "l"),
			cause: CauseWriteUnknown, proc: 0, start: 4, freed: true, words: []string{"freed at 0.150000s", "146.000ms later"},
		},
		{
			name: "an unknown acquire while a live holder holds, then a clean release and grant: not stuck",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l").op(2, 1, I, "acquire", "l").op(12, 1, N, "acquire", "l").
				op(150, 0, I, "release", "l").op(151, 0, K, "release", "l").op(152, 2, I, "acquire", "l").op(153, 2, K, "acquire", "l"),
			noneOK: true,
		},
		{
			// Liquibase's shape (docs/locks.md): process 0 releases (ok),
			// asks again, and its take applies while the read that decides
			// the grant misses it, so it answers fail; from then on the
			// lock refuses everyone. The history cannot tell the release
			// that did not free it from the acquire that took it: both
			// are named.
			name:  "free after a release answered ok, yet every acquire refused",
			h:     waiters(grant().op(2, 0, I, "release", "l").op(3, 0, K, "release", "l").op(4, 0, I, "acquire", "l").op(14, 0, F, "acquire", "l"), 5),
			cause: CauseRefused, proc: 0, start: 4,
			words: []string{"release of process 0, answered ok at 0.003000s", "the first refused after it: the acquire of process 0, answered fail at 0.014000s",
				"held to the end", "3 acquires refused"},
		},
		{
			// A partition refuses acquires by itself: the period says so.
			name: "refused after a release while a fault was in effect",
			h: grant().op(2, 0, I, "release", "l").op(3, 0, K, "release", "l").op(4, -1, N, history.StartF("partition"), "", val(map[string]string{})).
				op(5, 1, I, "acquire", "l").op(20, 1, F, "acquire", "l").op(21, 1, I, "acquire", "l").op(200, 1, F, "acquire", "l"),
			cause: CauseRefused, proc: 0, start: 5,
			words: []string{"the faults in effect meanwhile (partition) kept every acquire out"},
		},
		{
			name: "refused after a release, then granted late: a refused period that ended",
			h: grant().op(2, 0, I, "release", "l").op(3, 0, K, "release", "l").op(4, 1, I, "acquire", "l").op(20, 1, F, "acquire", "l").
				op(21, 1, I, "acquire", "l").op(120, 1, K, "acquire", "l"),
			cause: CauseRefused, proc: 0, start: 4, freed: true, words: []string{"freed at 0.120000s"},
		},
		{
			// Process 1 asked while 0 held the lock and did not retry:
			// its fail says nothing about the lock once free.
			name: "an acquire asked before the release and refused after it: not stuck",
			h: grant().op(2, 1, I, "acquire", "l").op(3, 0, I, "release", "l").op(4, 0, K, "release", "l").
				op(100, 1, F, "acquire", "l"),
			noneOK: true,
		},
		{
			// The history's lease is the client's view: a lock refused
			// after it ran out is waited on, not left held by an answer.
			name: "refused after a lease ran out: not stuck",
			h: (&b{}).op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l", lease(5)).op(10, 1, I, "acquire", "l").
				op(100, 1, F, "acquire", "l"),
			noneOK: true,
		},
		{
			name: "a holder's death outranks an unknown acquire as the cause",
			h: waiters(grant().op(2, 3, I, "acquire", "l").op(3, 3, N, "acquire", "l").
				op(4, 0, I, "add", "l", val(1)).op(6, 0, N, "add", "l", val(1)), 7),
			cause: CauseWriteUnknown, proc: 0, start: 6,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := liveOf(t, tt.h.list(), 10, 50)
			stuck := v.AllStuck()
			if tt.noneOK {
				if len(stuck) > 0 {
					t.Fatalf("stuck %q, want none", stuck[0].Message)
				}
				return
			}
			if len(stuck) != 1 {
				t.Fatalf("%d stuck periods, want 1: %+v", len(stuck), stuck)
			}
			s := stuck[0]
			if s.Cause != tt.cause || s.Process != tt.proc || s.Start != tt.start*1e6 || s.Freed != tt.freed {
				t.Errorf("stuck %s by %d from %v freed %v, want %s by %d from %dms freed %v", s.Cause, s.Process, time.Duration(s.Start),
					s.Freed, tt.cause, tt.proc, tt.start, tt.freed)
			}
			for _, w := range tt.words {
				if !strings.Contains(s.Message, w) {
					t.Errorf("message %q lacks %q", s.Message, w)
				}
			}
		})
	}
}

// TestStuckNeverInvalid: a stuck lock is a liveness result: the verdict of a
// history whose only trouble is a dead holder stays valid.
func TestStuckNeverInvalid(t *testing.T) {
	for _, way := range []string{synth.StuckWrite, synth.StuckAcquire, synth.StuckRelease, synth.StuckKill} {
		ops := synth.Ops(synth.Config{Events: 3000, Clients: 4, Seed: 3, Stuck: way, NoLease: true, Promise: history.PromiseMutex})
		res, err := Check(context.Background(), ops, WithAcquireTimeout(20*time.Millisecond), WithStuckBound(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != Valid {
			t.Errorf("%s: verdict %s, want valid (anomalies %s)", way, res.Verdict, kinds(res.Anomalies))
		}
		if len(res.Liveness.StuckAtEnd()) != 1 {
			t.Errorf("%s: %d locks stuck at the end, want 1", way, len(res.Liveness.StuckAtEnd()))
		}
	}
}

// TestLivenessSynth: over many seeds, each way of leaving the lock held is
// found once, at the moment of the operation that left it held, by the
// process that did, with the operation named; with a lease the lock frees
// and nothing is stuck; and the one lock's unavailable time is the stuck
// time beyond the acquire time-out.
func TestLivenessSynth(t *testing.T) {
	ways := map[string]string{synth.StuckWrite: CauseWriteUnknown, synth.StuckAcquire: CauseAcquireUnknown,
		synth.StuckRelease: CauseReleaseUnknown, synth.StuckKill: CauseKilled}
	const acq, bound = 20 * time.Millisecond, 100 * time.Millisecond
	for way, cause := range ways {
		for seed := range uint64(20) {
			t.Run(fmt.Sprintf("%s/%d", way, seed), func(t *testing.T) {
				cfg := synth.Config{Events: 2000, Clients: 5, Seed: seed, Stuck: way, NoLease: true, FailRate: 0.05}
				ops := synth.Ops(cfg)
				v := liveOf(t, ops, acq.Milliseconds(), bound.Milliseconds())
				// The line that left it held, from the history itself.
				var left *history.Op
				for i := range ops {
					o := &ops[i]
					if o.Type == history.Info && o.Process >= 0 && o.F != history.FMeta ||
						o.F == history.StartF(history.KindClientKill) {
						left = o
						break
					}
				}
				if left == nil {
					t.Fatal("synth dealt nothing")
				}
				stuck := v.AllStuck()
				if len(stuck) != 1 {
					t.Fatalf("%d stuck periods, want 1", len(stuck))
				}
				s := stuck[0]
				if s.Cause != cause || s.Start != left.Time || s.Freed || s.Ops[0].Index != left.Index {
					t.Fatalf("stuck %+v, want cause %s at %d by line %d, to the end", s, cause, left.Time, left.Index)
				}
				if s.End != v.End {
					t.Errorf("stuck until %d, want the end %d", s.End, v.End)
				}
				// Unavailable: the free time from the last hold's end to the
				// end, beyond the time-out (synth's other gaps are
				// milliseconds). A dead holder's hold ends at its death; an
				// acquire that took effect unseen leaves the lock free, as
				// far as the history says, since the release before it.
				freed := int(left.Index)
				if way == synth.StuckAcquire {
					for i := range ops {
						if o := ops[i]; o.Index < left.Index && o.Type == history.OK && o.F == history.FRelease {
							freed = i
						}
					}
				}
				// Counted from the first ask: an acquire in flight as it
				// was freed, else the next one invoked.
				open := map[int]bool{}
				for _, o := range ops[:freed+1] {
					if o.F == history.FAcquire {
						open[o.Process] = o.Type == history.Invoke
					}
				}
				from := ops[freed].Time
				if !slices.Contains(slices.Collect(maps.Values(open)), true) {
					i := slices.IndexFunc(ops[freed:], func(o history.Op) bool { return o.F == history.FAcquire && o.Type == history.Invoke })
					from = ops[freed+i].Time
				}
				want := (v.End - from - int64(acq)) / 1e6
				if got := v.Locks[0].UnavailableMS; got != want {
					t.Errorf("unavailable %d ms, want %d", got, want)
				}
				// The same history with a lease of 30 ms: it frees.
				cfg.NoLease, cfg.Lease = false, 30*time.Millisecond
				if st := liveOf(t, synth.Ops(cfg), acq.Milliseconds(), bound.Milliseconds()).AllStuck(); len(st) > 0 {
					t.Errorf("leased: stuck %s", st[0].Message)
				}
			})
		}
	}
}

// TestLivenessDefaults: the stuck bound comes from the meta line's settings
// when Check has none, and from the run's TTL by default.
func TestLivenessDefaults(t *testing.T) {
	meta := func(cfg map[string]string) *b {
		return (&b{}).op(0, -1, N, "meta", "", val(history.Meta{Test: "t", Config: cfg})).
			op(0, 0, I, "acquire", "l").op(1, 0, K, "acquire", "l")
	}
	for _, tt := range []struct {
		cfg          map[string]string
		acqMS, bound int64
	}{
		{nil, 5000, 10000},
		{map[string]string{"ttl": "3s"}, 5000, 13000},
		{map[string]string{"ttl": "3s", ConfigAcquireTimeout: "2s"}, 2000, 7000},
		{map[string]string{"ttl": "3s", ConfigStuckBound: "1m"}, 5000, 60000},
	} {
		res, err := Check(context.Background(), meta(tt.cfg).list())
		if err != nil {
			t.Fatal(err)
		}
		if v := res.Liveness; v.AcquireTimeoutMS != tt.acqMS || v.StuckBoundMS != tt.bound {
			t.Errorf("%v: time-out %d, bound %d; want %d, %d", tt.cfg, v.AcquireTimeoutMS, v.StuckBoundMS, tt.acqMS, tt.bound)
		}
	}
}

// BenchmarkLiveness is the liveness pass alone over a synthetic history of
// 100k lines with a stuck lock (per line: the check's whole pass is
// BenchmarkCheckFile).
func BenchmarkLiveness(b *testing.B) {
	ops := synth.Ops(synth.Config{Events: 100_000, Clients: 10, Locks: 4, Seed: 1, Stuck: synth.StuckWrite, NoLease: true, InfoRate: 0.01})
	cfg := newConfig(nil)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		v := newLiveness(cfg)
		for _, op := range ops {
			v.feed(op)
		}
		if v.finish() == nil {
			b.Fatal("no liveness")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ops)), "ns/line")
}
