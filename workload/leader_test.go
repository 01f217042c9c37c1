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

// term is one leader's time with the lock, read from the history by order
// alone: from its ok acquire to its release's invocation or its missed
// heartbeat. beats counts its ok heartbeats (an ok renew, or an ok
// re-acquire inside the term), adds its ok writes.
type term struct {
	proc   int
	beats  int
	adds   int
	missed bool // ended by a heartbeat that failed, not by a release
}

// terms reads the leaders' terms from ops, and counts the ok adds of
// processes that were not leading (stray): a leader writes only while it leads.
func terms(ops []history.Op) (out []term, stray int) {
	open := map[int]*term{}
	for _, op := range ops {
		t := open[op.Process]
		heartbeat := op.F == history.FRenew || op.F == history.FAcquire
		switch {
		case op.F == history.FAcquire && op.Type == history.OK && t == nil:
			open[op.Process] = &term{proc: op.Process}
		case t == nil:
			if op.F == history.FAdd && op.Type == history.OK {
				stray++
			}
		case op.F == history.FAdd && op.Type == history.OK:
			t.adds++
		case heartbeat && op.Type == history.OK:
			t.beats++
		case heartbeat && (op.Type == history.Fail || op.Type == history.Info), op.F == history.FRelease && op.Type == history.Invoke:
			t.missed = op.F != history.FRelease
			out = append(out, *t)
			delete(open, op.Process)
		}
	}
	return out, stray
}

// A leader keeps the lock past its lease when it can heartbeat (renew, or
// re-acquire a re-entrant lock), writes many times per term and only while
// it leads, and steps down when the heartbeat misses; a correct lock loses no
// write. Asserted on the history's order and counts, never on how long a
// term took: on a loaded machine a term stretches, its order does not.
func TestLeaderShape(t *testing.T) {
	const lease = 200 * time.Millisecond
	tests := []struct {
		name       string
		lease      time.Duration
		renew      bool
		reentrant  bool
		heartbeats string // the op a heartbeat is recorded as; "" = none
		beats      bool   // some term heartbeats twice: kept past its lease
	}{
		{name: "renew", lease: lease, renew: true, heartbeats: history.FRenew, beats: true},
		{name: "re-acquire", lease: lease, reentrant: true, heartbeats: history.FAcquire, beats: true},
		{name: "no lease"},
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
			ts, stray := terms(ops)
			if len(ts) < 2 {
				t.Fatalf("%d terms, want leaders to take turns", len(ts))
			}
			if stray > 0 {
				t.Errorf("%d ok adds by processes that were not leading", stray)
			}
			mostAdds, mostBeats, missed := 0, 0, 0
			for _, tm := range ts {
				mostAdds, mostBeats = max(mostAdds, tm.adds), max(mostBeats, tm.beats)
				if tm.missed {
					missed++
				}
			}
			if mostAdds < 2 {
				t.Errorf("terms %+v: a leader writes many times while it leads", ts)
			}
			if got := mostBeats >= 2; got != tt.beats {
				t.Errorf("at most %d ok heartbeats in a term; want two or more: %v", mostBeats, tt.beats)
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
			case tt.heartbeats == history.FAcquire && tt.beats:
				if okRenews != 0 || okAcquires <= len(ts) {
					t.Errorf("%d renews, %d ok acquires for %d terms: want re-acquires", okRenews, okAcquires, len(ts))
				}
			case tt.heartbeats == history.FAcquire:
				// Not re-entrant: a heartbeat waits on the leader's own
				// grant and misses (it may win the lock back as it expires,
				// a race the check above allows once per term).
				if missed == 0 {
					t.Errorf("no term ended by a missed heartbeat: a leader that cannot heartbeat must miss and step down")
				}
			default:
				if okRenews != 0 || okAcquires != len(ts) || missed != 0 {
					t.Errorf("%d renews, %d ok acquires, %d missed heartbeats for %d terms: a grant that does not expire needs no heartbeat", okRenews, okAcquires, missed, len(ts))
				}
			}
		})
	}
}

// The heartbeat is timed from the grant's deadline: a grant that came back
// slowly (most of its lease spent in the acquire) is renewed at once, never
// after its deadline.
func TestHeartbeatFromDeadline(t *testing.T) {
	const lease = 3 * time.Second
	now := time.Now()
	tests := []struct {
		name     string
		deadline time.Time
		want     time.Time
	}{
		{"fresh grant", now.Add(lease), now.Add(lease / 3)},
		{"slow grant", now.Add(lease / 4), now.Add(lease/4 - 2*lease/3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := heartbeatAt(Grant{Deadline: tt.deadline, Lease: lease})
			if d := got.Sub(tt.want); d > time.Millisecond || d < -time.Millisecond {
				t.Errorf("heartbeat at %v from now, want %v", got.Sub(now), tt.want.Sub(now))
			}
			if !got.Before(tt.deadline) {
				t.Errorf("heartbeat %v not before the deadline %v", got.Sub(now), tt.deadline.Sub(now))
			}
		})
	}
	if !heartbeatAt(Grant{}).IsZero() {
		t.Error("a grant that does not expire gets a heartbeat")
	}
}
