package workload

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// renewLock is a fakeLock with a heartbeat (a Renewer).
type renewLock struct{ fakeLock }

func (l renewLock) Renew(ctx context.Context, g Grant) (Grant, error) {
	start := time.Now()
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.s.owner[g.Lock] != g.Owner || time.Now().After(l.s.expires[g.Lock]) {
		return g, fmt.Errorf("renew %s: %w", g.Lock, ErrNotHeld)
	}
	l.s.expires[g.Lock] = time.Now().Add(l.s.lease)
	g.Deadline, g.Lease = start.Add(l.s.lease), l.s.lease
	return g, nil
}

// term is one leader's time with the lock: from its ok acquire to its
// release's invocation (or its last op).
type term struct {
	proc       int
	start, end int64
	adds       int
}

func terms(ops []history.Op) []term {
	open := map[int]*term{}
	var out []term
	for _, op := range ops {
		t := open[op.Process]
		switch {
		case op.F == history.FAcquire && op.Type == history.OK && t == nil:
			open[op.Process] = &term{proc: op.Process, start: op.Time, end: op.Time}
		case t == nil:
		case op.F == history.FAdd && op.Type == history.OK:
			t.adds++
			t.end = op.Time
		case op.F == history.FRelease && op.Type == history.Invoke,
			(op.F == history.FRenew || op.F == history.FAcquire) && op.Type == history.Fail:
			t.end = op.Time
			out = append(out, *t)
			delete(open, op.Process)
		}
	}
	return out
}

// A leader keeps the lock well past its lease when it can heartbeat
// (renew, or re-acquire a re-entrant lock), writes many times per term, and
// steps down when the heartbeat misses; a correct lock loses no write.
func TestLeaderShape(t *testing.T) {
	const lease = 200 * time.Millisecond
	tests := []struct {
		name       string
		lease      time.Duration
		renew      bool
		reentrant  bool
		longTerms  bool   // some term lasts over 2 leases
		heartbeats string // the op a heartbeat is recorded as; "" = none
	}{
		{name: "renew", lease: lease, renew: true, longTerms: true, heartbeats: history.FRenew},
		{name: "re-acquire", lease: lease, reentrant: true, longTerms: true, heartbeats: history.FAcquire},
		{name: "no lease", longTerms: true},
		{name: "cannot heartbeat", lease: lease, heartbeats: history.FAcquire},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := &memHistory{start: time.Now()}
			locks := newFakeLocks(tt.lease, false)
			locks.reentrant = tt.reentrant
			newLock := func(int, Clock) (Lock, error) { return fakeLock{s: locks}, nil }
			if tt.renew {
				newLock = func(int, Clock) (Lock, error) { return renewLock{fakeLock{s: locks}}, nil }
			}
			w, err := New(newLock, newFakeSet(), h, WithClients(3), WithSeed(3), WithShape(ShapeLeader),
				WithTerm(800*time.Millisecond), WithHold(10*time.Millisecond), WithAcquireTimeout(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			run(t, w, 2500*time.Millisecond)
			ops := h.all()
			checkWellFormed(t, ops)
			if lost := lostAdds(t, ops); len(lost) > 0 {
				t.Errorf("a correct lock lost acknowledged writes %v", lost)
			}
			ts := terms(ops)
			if len(ts) < 2 {
				t.Fatalf("%d terms, want leaders to take turns", len(ts))
			}
			var longest time.Duration
			for _, tm := range ts {
				longest = max(longest, time.Duration(tm.end-tm.start))
				if tm.adds < 2 && tm.end-tm.start > int64(100*time.Millisecond) {
					t.Errorf("term %+v: a leader writes while it leads", tm)
				}
			}
			if got := longest > 2*lease; got != tt.longTerms {
				t.Errorf("longest term %v; want longer than %v: %v", longest, 2*lease, tt.longTerms)
			}
			okRenews, okAcquires := count(ops, history.FRenew, history.OK), count(ops, history.FAcquire, history.OK)
			switch {
			case tt.heartbeats == history.FRenew:
				if okRenews == 0 {
					t.Error("no renew recorded")
				}
				for _, op := range ops {
					if op.F == history.FRenew && op.Type == history.OK && op.LeaseMS != lease.Milliseconds() {
						t.Errorf("renew ok with lease_ms %d, want %d", op.LeaseMS, lease.Milliseconds())
					}
				}
			case tt.heartbeats == history.FAcquire && tt.longTerms:
				if okRenews != 0 || okAcquires <= len(ts) {
					t.Errorf("%d renews, %d ok acquires for %d terms: want re-acquires", okRenews, okAcquires, len(ts))
				}
			case tt.heartbeats == history.FAcquire:
				if count(ops, history.FAcquire, history.Fail) == 0 {
					t.Error("a leader that cannot heartbeat must miss and step down")
				}
			default:
				if okRenews != 0 || okAcquires != len(ts) {
					t.Errorf("%d renews, %d ok acquires for %d terms: a grant that does not expire needs no heartbeat", okRenews, okAcquires, len(ts))
				}
			}
		})
	}
}
