package workload

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// unknownOnce is a fakeSet whose n-th add is applied and then reported
// unknown, as a write whose coordinator was cut off after the replicas
// took it.
type unknownOnce struct {
	*fakeSet
	mu   sync.Mutex
	adds int
	n    int
}

func (u *unknownOnce) Add(ctx context.Context, lock string, elem, token int64, beforeWrite func(context.Context) error) error {
	if err := u.fakeSet.Add(ctx, lock, elem, token, beforeWrite); err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.adds++; u.adds == u.n {
		return fmt.Errorf("write timeout: %w", ErrUnknown)
	}
	return nil
}

// A holder abandoned with a grant that never expires holds its lock for
// good: without the option every later acquire of it fails; with it the
// clients go on under a fresh name and the final reads cover both. A leased
// grant frees itself, and a stealable one keeps no one out, so the option
// leaves their names alone.
func TestRetireStuckLocks(t *testing.T) {
	tests := []struct {
		name       string
		lease      time.Duration
		stealable  bool
		retire     bool
		wantLocks  []string
		wantStuck  bool // no grant after the unknown add
		wantReads  int
		wantAddsOn string // a name with ok adds after the unknown one
	}{
		{name: "no lease, stays stuck", wantLocks: []string{"l0"}, wantStuck: true, wantReads: 1},
		{name: "no lease, retired", retire: true, wantLocks: []string{"l0", "l0.1"}, wantReads: 2, wantAddsOn: "l0.1"},
		{name: "no lease, stealable", stealable: true, retire: true, wantLocks: []string{"l0"}, wantReads: 1, wantAddsOn: "l0"},
		{name: "leased, frees itself", lease: 50 * time.Millisecond, retire: true, wantLocks: []string{"l0"}, wantReads: 1, wantAddsOn: "l0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &memHistory{start: time.Now()}
			opts := []Option{WithClients(3), WithSeed(3), WithHold(2 * time.Millisecond), WithThink(time.Millisecond),
				WithAcquireTimeout(100 * time.Millisecond)}
			if tt.retire {
				opts = append(opts, WithRetireStuckLocks())
			}
			locks := newFakeLocks(tt.lease, false)
			locks.stealable = tt.stealable
			w := newFake(t, locks, &unknownOnce{fakeSet: newFakeSet(), n: 3}, h, opts...)
			run(t, w, 500*time.Millisecond)
			ops := h.all()
			checkWellFormed(t, ops)
			if got := w.Locks(); !slices.Equal(got, tt.wantLocks) {
				t.Errorf("locks %v, want %v", got, tt.wantLocks)
			}
			if got := count(ops, history.FRead, history.OK); got != tt.wantReads {
				t.Errorf("%d ok final reads, want %d", got, tt.wantReads)
			}
			unknown := slices.IndexFunc(ops, func(op history.Op) bool { return op.F == history.FAdd && op.Type == history.Info })
			if unknown < 0 {
				t.Fatal("no add ended unknown")
			}
			later := 0
			addsOn := map[string]int{}
			for _, op := range ops[unknown:] {
				if op.Type != history.OK {
					continue
				}
				switch op.F {
				case history.FAcquire:
					later++
				case history.FAdd:
					addsOn[op.Lock]++
				}
			}
			if tt.wantStuck != (later == 0) {
				t.Errorf("%d grants after the abandoned hold, want stuck=%v", later, tt.wantStuck)
			}
			if tt.wantAddsOn != "" && addsOn[tt.wantAddsOn] == 0 {
				t.Errorf("no ok add on %s after the abandoned hold (adds by lock: %v)", tt.wantAddsOn, addsOn)
			}
			if lost := lostAdds(t, ops); len(lost) > 0 {
				t.Errorf("acknowledged adds missing from the final reads: %v", lost)
			}
		})
	}
}
