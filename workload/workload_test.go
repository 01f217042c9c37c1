package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// memHistory records ops in memory, stamping index and time like history.Writer.
type memHistory struct {
	mu    sync.Mutex
	ops   []history.Op
	start time.Time
}

func (h *memHistory) Append(op history.Op) (history.Op, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	op.Index = int64(len(h.ops))
	op.Time = int64(time.Since(h.start))
	h.ops = append(h.ops, op)
	return op, nil
}

func (h *memHistory) all() []history.Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ops)
}

// fakeLocks is an in-memory lock service: one owner per name, with an
// optional lease after which the lock frees itself, and a fencing token that
// grows with every grant.
type fakeLocks struct {
	mu      sync.Mutex
	owner   map[string]string
	expires map[string]time.Time
	token   int64
	lease   time.Duration
	fenced  bool
	// unknownEvery makes every n-th acquire return ErrUnknown after taking
	// effect (0: never), like a CAS timeout whose write was applied.
	unknownEvery int
	acquires     int
	// reentrant: an owner that holds the lock gets it again at once.
	reentrant bool
	// stealable: every acquire takes the lock from its holder, as a
	// Temporal host steals a shard.
	stealable bool
}

func newFakeLocks(lease time.Duration, fenced bool) *fakeLocks {
	return &fakeLocks{owner: map[string]string{}, expires: map[string]time.Time{}, lease: lease, fenced: fenced}
}

type fakeLock struct {
	s     *fakeLocks
	clock Clock
}

func (l fakeLock) Acquire(ctx context.Context, name, owner string) (Grant, error) {
	start := time.Now()
	for {
		l.s.mu.Lock()
		if exp, ok := l.s.expires[name]; ok && l.s.lease > 0 && time.Now().After(exp) {
			delete(l.s.owner, name)
		}
		if o, held := l.s.owner[name]; !held || l.s.stealable || (l.s.reentrant && o == owner) {
			l.s.owner[name] = owner
			l.s.expires[name] = time.Now().Add(l.s.lease)
			l.s.token++
			l.s.acquires++
			g := Grant{Lock: name, Owner: owner, Lease: l.s.lease, Stealable: l.s.stealable}
			if l.s.fenced {
				g.Token = l.s.token
			}
			if l.s.lease > 0 {
				g.Deadline = start.Add(l.s.lease)
			}
			unknown := l.s.unknownEvery > 0 && l.s.acquires%l.s.unknownEvery == 0
			l.s.mu.Unlock()
			if unknown {
				return Grant{}, fmt.Errorf("cas timeout: %w", ErrUnknown)
			}
			return g, nil
		}
		l.s.mu.Unlock()
		select {
		case <-ctx.Done():
			return Grant{}, fmt.Errorf("acquire %s: %w", name, ErrNotAcquired)
		case <-time.After(time.Millisecond):
		}
	}
}

func (l fakeLock) Release(ctx context.Context, g Grant) error {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.s.owner[g.Lock] != g.Owner {
		return fmt.Errorf("release %s: %w", g.Lock, ErrNotHeld)
	}
	delete(l.s.owner, g.Lock)
	return nil
}

// fakeSet is the protected resource: a set per lock, read-modify-written
// without any protection of its own, so a stale holder's write loses
// elements unless a token fences it.
type fakeSet struct {
	mu    sync.Mutex
	sets  map[string][]int64
	fence map[string]int64
}

func newFakeSet() *fakeSet { return &fakeSet{sets: map[string][]int64{}, fence: map[string]int64{}} }

func (s *fakeSet) Read(ctx context.Context, lock string) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sets[lock]), nil
}

func (s *fakeSet) Add(ctx context.Context, lock string, elem, token int64, beforeWrite func(context.Context) error) error {
	set, _ := s.Read(ctx, lock)
	if err := beforeWrite(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if token > 0 {
		if token < s.fence[lock] {
			return fmt.Errorf("add %d: %w", elem, ErrStaleToken)
		}
		s.fence[lock] = token
	}
	s.sets[lock] = append(set, elem)
	return ctx.Err()
}

func newFake(t *testing.T, locks *fakeLocks, res Resource, h *memHistory, opts ...Option) *Workload {
	t.Helper()
	w, err := New(func(int, Clock) (Lock, error) { return fakeLock{s: locks}, nil }, res, h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func run(t *testing.T, w *Workload, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.FinalReads(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// checkWellFormed asserts history.md's rules: each invoke is completed once
// by the same process and f, a process has at most one operation in flight
// and does nothing after an info.
func checkWellFormed(t *testing.T, ops []history.Op) {
	t.Helper()
	open := map[int]history.Op{}
	crashed := map[int]bool{}
	for _, op := range ops {
		if crashed[op.Process] {
			t.Fatalf("op %d: process %d acts after an info", op.Index, op.Process)
		}
		if op.Type == history.Invoke {
			if prev, ok := open[op.Process]; ok {
				t.Fatalf("op %d: process %d invokes while op %d is in flight", op.Index, op.Process, prev.Index)
			}
			open[op.Process] = op
			continue
		}
		inv, ok := open[op.Process]
		if !ok || inv.F != op.F {
			t.Fatalf("op %d: completion %s %s without its invoke", op.Index, op.Type, op.F)
		}
		delete(open, op.Process)
		if op.Type == history.Info {
			crashed[op.Process] = true
		}
	}
	if len(open) > 0 {
		t.Fatalf("%d operations never completed", len(open))
	}
}

// lostAdds are the acknowledged adds missing from the final reads.
func lostAdds(t *testing.T, ops []history.Op) []int64 {
	t.Helper()
	acked := map[string][]int64{}
	final := map[string][]int64{}
	for _, op := range ops {
		switch {
		case op.F == history.FAdd && op.Type == history.OK:
			var e int64
			if err := json.Unmarshal(op.Value, &e); err != nil {
				t.Fatal(err)
			}
			acked[op.Lock] = append(acked[op.Lock], e)
		case op.F == history.FRead && op.Type == history.OK:
			var set []int64
			if err := json.Unmarshal(op.Value, &set); err != nil {
				t.Fatal(err)
			}
			final[op.Lock] = set
		}
	}
	var lost []int64
	for lock, es := range acked {
		for _, e := range es {
			if !slices.Contains(final[lock], e) {
				lost = append(lost, e)
			}
		}
	}
	return lost
}

func count(ops []history.Op, f string, typ history.Type) int {
	n := 0
	for _, op := range ops {
		if op.F == f && op.Type == typ {
			n++
		}
	}
	return n
}

func TestWorkloadRecordsWellFormedHistory(t *testing.T) {
	tests := []struct {
		name         string
		lease        time.Duration
		fenced       bool
		unknownEvery int
		wantInfo     bool
	}{
		{name: "mutex", lease: 0},
		{name: "lease fenced", lease: time.Second, fenced: true},
		{name: "unknown acquires", lease: 300 * time.Millisecond, unknownEvery: 7, wantInfo: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &memHistory{start: time.Now()}
			locks := newFakeLocks(tt.lease, tt.fenced)
			locks.unknownEvery = tt.unknownEvery
			w := newFake(t, locks, newFakeSet(), h, WithClients(4), WithLocks("a", "b"), WithSeed(7),
				WithHold(5*time.Millisecond), WithThink(2*time.Millisecond), WithAcquireTimeout(time.Second))
			run(t, w, 600*time.Millisecond)
			ops := h.all()
			checkWellFormed(t, ops)
			if n := count(ops, history.FAdd, history.OK); n < 10 {
				t.Errorf("only %d ok adds", n)
			}
			if lost := lostAdds(t, ops); len(lost) > 0 {
				t.Errorf("a correct lock lost acknowledged adds %v", lost)
			}
			if got := count(ops, history.FRead, history.OK); got != 2 {
				t.Errorf("%d ok final reads, want one per lock", got)
			}
			elems := map[string]bool{}
			for _, op := range ops {
				if op.F == history.FAdd && op.Type == history.Invoke {
					if elems[string(op.Value)] {
						t.Fatalf("element %s added twice", op.Value)
					}
					elems[string(op.Value)] = true
				}
				if op.F == history.FAcquire && op.Type == history.OK {
					if op.LeaseMS != tt.lease.Milliseconds() {
						t.Errorf("lease_ms %d, want %d", op.LeaseMS, tt.lease.Milliseconds())
					}
					if tt.fenced != (op.Value != nil) {
						t.Errorf("fenced=%v but acquire value %s", tt.fenced, op.Value)
					}
				}
			}
			infos := count(ops, history.FAcquire, history.Info)
			if tt.wantInfo != (infos > 0) {
				t.Errorf("%d info acquires, want some: %v", infos, tt.wantInfo)
			}
			if tt.wantInfo {
				checkPerClient(t, ops, w.Clients(), finalRead("a", "b"))
			}
			st := w.Stats()
			if st.OK == 0 || st.Acquired == 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// A client paused between its read and its write, longer than its lease,
// loses another holder's add when the resource is unfenced, and is refused
// when the token fences it. This is the scenario the client-pause nemesis
// aims at; the fake lock is itself correct.
func TestPauseHolder(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		t.Run(fmt.Sprintf("fenced=%v", fenced), func(t *testing.T) {
			h := &memHistory{start: time.Now()}
			w := newFake(t, newFakeLocks(100*time.Millisecond, fenced), newFakeSet(), h,
				WithClients(3), WithLocks("x"), WithHold(time.Millisecond), WithThink(time.Millisecond))
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			var p history.ClientPauseStart
			var done <-chan struct{}
			var perr error
			var wg sync.WaitGroup
			wg.Go(func() {
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				defer pcancel()
				// The nemesis's lines, written when the stall has begun
				// and as the client resumes.
				started := make(chan struct{})
				resumed := func() {
					<-started
					h.Append(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.StopF(history.KindClientPause)})
				}
				p, done, perr = w.Control().PauseHolder(pctx, 300*time.Millisecond, 0, resumed)
				if perr == nil {
					h.Append(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.StartF(history.KindClientPause)})
				}
				close(started)
			})
			if err := w.Run(ctx); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			if perr != nil {
				t.Fatal(perr)
			}
			select {
			case <-done:
			default:
				t.Fatal("pause not over after the run")
			}
			if p.MS != 400 || p.Lock != "x" {
				t.Errorf("pause %+v, want 400ms (lease + extra) on x", p)
			}
			if err := w.FinalReads(context.Background()); err != nil {
				t.Fatal(err)
			}
			ops := h.all()
			stallWindow(t, ops, p.Process)
			ops = slices.DeleteFunc(ops, func(op history.Op) bool { return op.Process == history.NemesisProcess })
			checkWellFormed(t, ops)
			lost := lostAdds(t, ops)
			stale := count(ops, history.FAdd, history.Fail)
			if fenced && (len(lost) > 0 || stale == 0) {
				t.Errorf("fenced: lost %v, %d refused adds; want none lost, the stale one refused", lost, stale)
			}
			if !fenced && len(lost) == 0 {
				t.Errorf("unfenced: the stale holder's write lost nothing")
			}
		})
	}
}

func TestSameSeedSameChoices(t *testing.T) {
	choices := func(seed int64) []string {
		h := &memHistory{start: time.Now()}
		w := newFake(t, newFakeLocks(0, false), newFakeSet(), h, WithClients(1), WithLocks("a", "b", "c"),
			WithSeed(seed), WithHold(0), WithThink(0), WithStagger(0))
		run(t, w, 50*time.Millisecond)
		var names []string
		for _, op := range h.all() {
			if op.F == history.FAcquire && op.Type == history.Invoke && len(names) < 20 {
				names = append(names, op.Lock)
			}
		}
		if len(names) < 20 {
			t.Fatalf("only %d acquires", len(names))
		}
		return names
	}
	a, b, c := choices(3), choices(3), choices(4)
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different choices:\n%v\n%v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("different seeds, same choices %v", a)
	}
}

func TestClientClockReachesLock(t *testing.T) {
	var clocks []Clock
	var mu sync.Mutex
	w, err := New(func(i int, c Clock) (Lock, error) {
		mu.Lock()
		clocks = append(clocks, c)
		mu.Unlock()
		return fakeLock{s: newFakeLocks(0, false)}, nil
	}, newFakeSet(), &memHistory{start: time.Now()}, WithClients(2))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Control().SetClientClock(1, -10*time.Second); err != nil {
		t.Fatal(err)
	}
	for i, c := range clocks {
		skew := c.Now().Sub(time.Now())
		behind := skew < -9*time.Second
		if behind != (c == Clock(w.Clock(1))) {
			t.Errorf("clock %d reads %v from the machine's", i, skew)
		}
	}
	if err := w.Control().SetClientClock(5, time.Second); err == nil {
		t.Error("no error for a client that does not exist")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	l := func(int, Clock) (Lock, error) { return nil, nil }
	tests := []struct {
		name string
		opts []Option
	}{
		{"no clients", []Option{WithClients(0)}},
		{"no locks", []Option{WithLocks()}},
		{"zero timeout", []Option{WithAcquireTimeout(0)}},
		{"unknown shape", []Option{WithShape("elect")}},
		{"zero term", []Option{WithShape(ShapeLeader), WithTerm(0)}},
	}
	for _, tt := range tests {
		if _, err := New(l, newFakeSet(), &memHistory{}, tt.opts...); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

// expiredLock grants leases that are already over when Acquire returns.
type expiredLock struct{}

func (expiredLock) Acquire(ctx context.Context, name, owner string) (Grant, error) {
	return Grant{Lock: name, Owner: owner, Deadline: time.Now().Add(-time.Millisecond), Lease: time.Millisecond}, nil
}
func (expiredLock) Release(ctx context.Context, g Grant) error { return nil }

// A client never enters its critical section with a grant it already knows
// to be expired.
func TestExpiredGrantSkipsCriticalSection(t *testing.T) {
	h := &memHistory{start: time.Now()}
	w, err := New(func(int, Clock) (Lock, error) { return expiredLock{}, nil }, newFakeSet(), h, WithClients(2), WithStagger(0))
	if err != nil {
		t.Fatal(err)
	}
	run(t, w, 100*time.Millisecond)
	ops := h.all()
	checkWellFormed(t, ops)
	if n := count(ops, history.FAcquire, history.OK); n == 0 || count(ops, history.FRelease, history.OK) != n {
		t.Errorf("%d ok acquires, %d ok releases", n, count(ops, history.FRelease, history.OK))
	}
	if n := count(ops, history.FAdd, history.Invoke); n != 0 {
		t.Errorf("%d adds with expired grants", n)
	}
}

// procLock is a fakeLock whose client runs in a process of its own: it
// records what the client faults did to that process.
type procLock struct {
	fakeLock
	mu      sync.Mutex
	stopped bool          // between PauseProcess and its resume
	pauses  int           // PauseProcess calls
	inPause time.Duration // how long the process stayed stopped
	offset  time.Duration // the last SetClockOffset
}

func (l *procLock) PauseProcess() (func() error, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped, l.pauses = true, l.pauses+1
	at := time.Now()
	return func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.stopped, l.inPause = false, time.Since(at)
		return nil
	}, nil
}

func (l *procLock) SetClockOffset(d time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.offset = d
	return nil
}

// A lock with a process of its own has that process stopped for the whole
// client pause and resumed after it, and its clock moved with the client's.
func TestClientFaultsReachLockProcess(t *testing.T) {
	locks := newFakeLocks(50*time.Millisecond, false)
	procs := make([]*procLock, 2)
	w, err := New(func(i int, c Clock) (Lock, error) {
		procs[i] = &procLock{fakeLock: fakeLock{s: locks}}
		return procs[i], nil
	}, newFakeSet(), &memHistory{start: time.Now()}, WithClients(2), WithHold(time.Millisecond), WithThink(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var p history.ClientPauseStart
	var perr error
	var wg sync.WaitGroup
	wg.Go(func() { p, _, perr = w.Control().PauseHolder(ctx, 200*time.Millisecond, 0, nil) })
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if perr != nil {
		t.Fatal(perr)
	}
	paused := procs[p.Client]
	if pd := time.Duration(p.MS) * time.Millisecond; paused.pauses != 1 || paused.stopped || paused.inPause < pd {
		t.Errorf("paused process: %d pauses, stopped after the pause %v, stopped %v of the %v pause",
			paused.pauses, paused.stopped, paused.inPause, pd)
	}
	if other := procs[1-p.Client]; other.pauses != 0 {
		t.Errorf("the other client's process was stopped %d times", other.pauses)
	}
	if err := w.Control().SetClientClock(1, -7*time.Second); err != nil {
		t.Fatal(err)
	}
	if procs[1].offset != -7*time.Second || procs[0].offset != 0 {
		t.Errorf("process clock offsets %v, %v; want 0, -7s", procs[0].offset, procs[1].offset)
	}
}

// steppedLock reads its client's clock at both ends of every Acquire: a
// step at rest must never fall inside one.
type steppedLock struct {
	fakeLock
	mid *atomic.Int64
}

func (l steppedLock) Acquire(ctx context.Context, name, owner string) (Grant, error) {
	before := l.clock.Now().Sub(time.Now())
	time.Sleep(2 * time.Millisecond)
	g, err := l.fakeLock.Acquire(ctx, name, owner)
	if after := l.clock.Now().Sub(time.Now()); (after - before).Abs() > time.Second {
		l.mid.Add(1)
	}
	return g, err
}

func TestClientClockAtRestStepsBetweenOperations(t *testing.T) {
	var mid atomic.Int64
	locks := newFakeLocks(0, false)
	w, err := New(func(i int, c Clock) (Lock, error) {
		return steppedLock{fakeLock{s: locks, clock: c}, &mid}, nil
	}, newFakeSet(), &memHistory{start: time.Now()}, WithClients(3), WithHold(2*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	// The run ends once the last step has landed (bounded), not after a
	// fixed time a loaded machine may spend before the steps are asked.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	for k := range 20 {
		if err := w.Control().SetClientClockAtRest(1, -time.Duration(k%2)*10*time.Second, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := w.Control().SetClientClockAtRest(1, -10*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	for wait := time.Now().Add(10 * time.Second); w.Clock(1).Offset() != -10*time.Second && time.Now().Before(wait); {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if n := mid.Load(); n > 0 {
		t.Errorf("%d acquires saw their clock step in the middle", n)
	}
	if got := w.Clock(1).Offset(); got != -10*time.Second {
		t.Errorf("client 1's clock offset %v after its rest (10 s allowed), want -10s", got)
	}
	if got := w.Clock(0).Offset(); got != 0 {
		t.Errorf("client 0's clock moved: %v", got)
	}
	// A step still waiting is cancelled by a direct set.
	if err := w.Control().SetClientClockAtRest(2, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Control().SetClientClock(2, 0); err != nil {
		t.Fatal(err)
	}
	w.ctl.rest(context.Background(), 2)
	if got := w.Clock(2).Offset(); got != 0 {
		t.Errorf("cancelled step applied: %v", got)
	}
	if err := w.Control().SetClientClockAtRest(7, time.Second, nil); err == nil {
		t.Error("no error for a client that does not exist")
	}
}

func TestHoldAtRestKeepsClientsBetweenOperations(t *testing.T) {
	locks := newFakeLocks(0, false)
	h := &memHistory{start: time.Now()}
	w, err := New(func(i int, c Clock) (Lock, error) { return fakeLock{s: locks, clock: c}, nil },
		newFakeSet(), h, WithClients(3), WithHold(2*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	// ran counts the operations each process recorded after the first n
	// lines.
	ran := func(n int) map[int]int {
		out := map[int]int{}
		for _, op := range h.all()[n:] {
			out[op.Process]++
		}
		return out
	}
	waitFor(ctx, t, "every client running", func() bool { r := ran(0); return r[0] > 0 && r[1] > 0 && r[2] > 0 })
	hctx, hcancel := context.WithTimeout(ctx, 30*time.Second)
	release, err := w.Control().HoldAtRest(hctx, []int{0, 2})
	hcancel()
	if err != nil {
		t.Fatal(err)
	}
	if hs := w.Control().Holders(); slices.Contains(hs, 0) || slices.Contains(hs, 2) {
		t.Errorf("held clients hold %v", hs)
	}
	before := len(h.all())
	// Held while the free client runs on: its operations, not a time,
	// say the held ones had their chance to move.
	waitFor(ctx, t, "client 1 running on", func() bool { return ran(before)[1] >= 20 })
	if r := ran(before); r[0] > 0 || r[2] > 0 {
		t.Errorf("held clients ran operations: %v", r)
	}
	release()
	release() // harmless twice
	waitFor(ctx, t, "the released clients running", func() bool { r := ran(before); return r[0] > 0 && r[2] > 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := w.Control().HoldAtRest(context.Background(), []int{3}); err == nil {
		t.Error("no error for a client that does not exist")
	}
}

// stallWindow checks that the pause's lines bound the stall itself: the
// stalled process records nothing between them (it stood still), the stop
// line comes before its add completes, and it goes on after.
func stallWindow(t *testing.T, ops []history.Op, proc int) {
	t.Helper()
	start := slices.IndexFunc(ops, func(op history.Op) bool { return op.F == history.StartF(history.KindClientPause) })
	stop := slices.IndexFunc(ops, func(op history.Op) bool { return op.F == history.StopF(history.KindClientPause) })
	if start < 0 || stop < start {
		t.Fatalf("pause lines at %d and %d", start, stop)
	}
	for _, op := range ops[start:stop] {
		if op.Process == proc {
			t.Errorf("stalled process %d recorded %s %s inside its stall", proc, op.Type, op.F)
		}
	}
	after := slices.IndexFunc(ops[stop:], func(op history.Op) bool { return op.Process == proc && op.F == history.FAdd })
	if after < 0 {
		t.Errorf("the stalled add of process %d did not complete after the resume", proc)
	}
}

// waitFor polls cond until it holds, failing the test with what when ctx
// ends first.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// perClientSet is one set written through a connection per client: it
// counts which client's connection each add took.
type perClientSet struct {
	*fakeSet
	mu   sync.Mutex
	adds map[int]int // client -> adds through its own connection
}

type clientConn struct {
	*perClientSet
	client int
}

func (c clientConn) Add(ctx context.Context, lock string, elem, token int64, beforeWrite func(context.Context) error) error {
	c.mu.Lock()
	c.adds[c.client]++
	c.mu.Unlock()
	return c.fakeSet.Add(ctx, lock, elem, token, beforeWrite)
}

func (p *perClientSet) Client(i int) Resource { return clientConn{perClientSet: p, client: i} }

func (p *perClientSet) Add(ctx context.Context, lock string, elem, token int64, beforeWrite func(context.Context) error) error {
	return errors.New("an add through the shared connection")
}

// A ClientResource's critical sections go through each client's own
// connection (its pinned coordinator), never the shared one; the final
// reads through the shared one.
func TestClientResourceCarriesEachClientsAdds(t *testing.T) {
	h := &memHistory{start: time.Now()}
	res := &perClientSet{fakeSet: newFakeSet(), adds: map[int]int{}}
	w := newFake(t, newFakeLocks(time.Second, false), res, h, WithClients(3), WithSeed(3),
		WithHold(2*time.Millisecond), WithThink(time.Millisecond), WithAcquireTimeout(time.Second))
	run(t, w, 400*time.Millisecond)
	ops := h.all()
	checkWellFormed(t, ops)
	if n := count(ops, history.FAdd, history.Fail) + count(ops, history.FAdd, history.Info); n > 0 {
		t.Errorf("%d adds failed: some went through the shared connection", n)
	}
	ok := count(ops, history.FAdd, history.OK)
	total := 0
	for c := range 3 {
		if res.adds[c] == 0 {
			t.Errorf("client %d added nothing through its own connection (adds %v)", c, res.adds)
		}
		total += res.adds[c]
	}
	if ok == 0 || total != ok {
		t.Errorf("%d ok adds, %d through the clients' connections", ok, total)
	}
	if got := count(ops, history.FRead, history.OK); got != 1 {
		t.Errorf("%d ok final reads, want 1", got)
	}
}
