package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// client-kill at each target on an in-process client of a lock with no
// lease: the start line comes before the killed operation's info
// completion, the killed process writes nothing after, the client comes
// back as its next process (a fresh Lock from its NewLockFunc) after the
// stop line, and the history alone shows the lock held for good by the
// killed process (hold; acquire: the fake grants a free lock at once, so
// the killed acquire took effect), or freed (release: the fake's release
// took effect before the kill landed, and the others are granted it again).
func TestClientKill(t *testing.T) {
	for _, in := range []string{KillHold, KillAcquire, KillRelease} {
		t.Run(in, func(t *testing.T) {
			h := &memHistory{start: time.Now()}
			locks := newFakeLocks(0, false)
			var made atomic.Int32
			w, err := New(func(int, Clock) (Lock, error) { made.Add(1); return fakeLock{s: locks}, nil }, newFakeSet(), h,
				WithClients(3), WithLocks("x"), WithHold(time.Millisecond), WithThink(time.Millisecond), WithAcquireTimeout(200*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			var v history.ClientKillStart
			var done <-chan struct{}
			var kerr error
			var wg sync.WaitGroup
			wg.Go(func() {
				kctx, kcancel := context.WithTimeout(ctx, time.Second)
				defer kcancel()
				killed := func(v history.ClientKillStart) error {
					b, _ := json.Marshal(v)
					_, err := h.Append(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.StartF(history.KindClientKill), Value: b})
					return err
				}
				restarted := func(v history.ClientKillStop) {
					b, _ := json.Marshal(v)
					h.Append(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.StopF(history.KindClientKill), Value: b})
				}
				v, done, kerr = w.Control().KillClient(kctx, -1, in, 50*time.Millisecond, 5*time.Millisecond, killed, restarted)
			})
			if err := w.Run(ctx); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			if kerr != nil {
				t.Fatal(kerr)
			}
			<-done
			if v.InFlight != in || v.Lock != "x" || v.RestartMS != 50 {
				t.Errorf("kill %+v, want in %s on x, restart 50", v, in)
			}
			if made.Load() != 4 {
				t.Errorf("%d locks made, want 4: 3 clients and the killed one's fresh one", made.Load())
			}
			ops := h.all()
			var start, stop = -1, -1
			var stopV history.ClientKillStop
			for i, op := range ops {
				switch op.F {
				case history.StartF(history.KindClientKill):
					start = i
				case history.StopF(history.KindClientKill):
					stop = i
					json.Unmarshal(op.Value, &stopV)
				}
			}
			if start < 0 || stop < start {
				t.Fatalf("start line %d, stop line %d", start, stop)
			}
			if stopV.Client != v.Client || stopV.Process != v.Process+3 {
				t.Errorf("restarted %+v, want client %d as process %d", stopV, v.Client, v.Process+3)
			}
			for i, op := range ops {
				switch {
				case op.Process == v.Process && i > start && !(in != KillHold && op.Type == history.Info && op.F == in):
					t.Errorf("line %d: the killed process went on: %+v", i, op)
				case op.Process == stopV.Process && i < stop:
					t.Errorf("line %d: the fresh process ran before its restart: %+v", i, op)
				}
			}
			if in != KillHold {
				i := slices.IndexFunc(ops, func(op history.Op) bool { return op.Process == v.Process && op.Type == history.Info })
				if i < start {
					t.Errorf("the killed %s's info at line %d, not after the start line %d", in, i, start)
				}
			}
			checkWellFormed(t, slices.DeleteFunc(slices.Clone(ops), func(op history.Op) bool { return op.Process == history.NemesisProcess }))
			res, err := checker.Check(context.Background(), ops, checker.WithAcquireTimeout(200*time.Millisecond), checker.WithStuckBound(300*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			stuck := res.Liveness.StuckAtEnd()
			if in == KillRelease {
				if len(stuck) > 0 {
					t.Errorf("stuck %s, want none: the release took effect", stuck[0].Message)
				}
				return
			}
			if len(stuck) != 1 || stuck[0].Cause != checker.CauseKilled || stuck[0].Process != v.Process {
				t.Errorf("stuck %+v, want x held for good by process %d (client-kill)", stuck, v.Process)
			}
		})
	}
}

// releaseUnknownOnce's n-th release does not take effect and is answered
// unknown, as a release whose LWT timed out before it applied.
type releaseUnknownOnce struct {
	fakeLock
	mu *sync.Mutex
	n  *int
}

func (l releaseUnknownOnce) Release(ctx context.Context, g Grant) error {
	l.mu.Lock()
	*l.n--
	last := *l.n == 0
	l.mu.Unlock()
	if last {
		return fmt.Errorf("release timeout: %w", ErrUnknown)
	}
	return l.fakeLock.Release(ctx, g)
}

// --retire-stuck moves the clients on from all three ways a lock with no
// lease is left held: besides an unknown write (stuck_test.go), an acquire
// that took effect answered unknown, and a release that did not answered
// unknown; the liveness check finds each from the history when the clients
// stay, naming the operation.
func TestRetireStuckOnUnknownAcquireAndRelease(t *testing.T) {
	for _, tt := range []struct {
		name  string
		lock  func(*fakeLocks) Lock
		cause string
	}{
		{"acquire", func(s *fakeLocks) Lock { s.unknownEvery = 4; return fakeLock{s: s} }, checker.CauseAcquireUnknown},
		{"release", func(s *fakeLocks) Lock { n := 3; return releaseUnknownOnce{fakeLock{s: s}, &sync.Mutex{}, &n} }, checker.CauseReleaseUnknown},
	} {
		for _, retire := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/retire=%v", tt.name, retire), func(t *testing.T) {
				h := &memHistory{start: time.Now()}
				locks := newFakeLocks(0, false)
				lock := tt.lock(locks)
				opts := []Option{WithClients(3), WithSeed(3), WithHold(2 * time.Millisecond), WithThink(time.Millisecond),
					WithAcquireTimeout(100 * time.Millisecond)}
				if retire {
					opts = append(opts, WithRetireStuckLocks())
				}
				w, err := New(func(int, Clock) (Lock, error) { return lock, nil }, newFakeSet(), h, opts...)
				if err != nil {
					t.Fatal(err)
				}
				run(t, w, 600*time.Millisecond)
				ops := h.all()
				checkWellFormed(t, ops)
				if moved := len(w.Locks()) > 1; moved != retire {
					t.Errorf("locks %v: moved on %v, want %v", w.Locks(), moved, retire)
				}
				res, err := checker.Check(context.Background(), ops, checker.WithAcquireTimeout(100*time.Millisecond), checker.WithStuckBound(200*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				stuck := res.Liveness.StuckAtEnd()
				if len(stuck) == 0 || stuck[0].Cause != tt.cause || stuck[0].Lock != "l0" {
					t.Fatalf("stuck %+v, want l0 held to the end by an %s", stuck, tt.cause)
				}
			})
		}
	}
}
