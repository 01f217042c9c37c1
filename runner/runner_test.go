package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/spec"
	"github.com/lockcheck/lockcheck/workload"
)

// memStore keeps runs in a temporary directory and checks them with the
// checker alone (the reports package adds the HTML).
type memStore struct{ root string }

func (s memStore) NewRunDir(store, test string, at time.Time) (string, error) {
	dir := filepath.Join(s.root, test, at.Format("20060102T150405.000000000"))
	return dir, os.MkdirAll(dir, 0o755)
}

func (s memStore) Build(ctx context.Context, dir string) (checker.Result, error) {
	return checker.CheckFile(ctx, filepath.Join(dir, "history.jsonl"))
}

// memLocks is an in-memory lock service. racy: acquire reads the holder and
// then writes itself without atomicity (the control every checker must
// catch). lease > 0: a grant expires, as a Cassandra TTL does. fenced: grants
// carry growing tokens. anyToken: the resource accepts any token (the fenced
// promise's control, as lease-fenced-broken).
type memLocks struct {
	mu       sync.Mutex
	owner    map[string]string
	exp      map[string]time.Time
	token    int64
	racy     bool
	lease    time.Duration
	fenced   bool
	anyToken bool
}

type memLock struct{ s *memLocks }

func (l memLock) Acquire(ctx context.Context, name, owner string) (workload.Grant, error) {
	start := time.Now()
	for {
		l.s.mu.Lock()
		if e, ok := l.s.exp[name]; ok && l.s.lease > 0 && time.Now().After(e) {
			delete(l.s.owner, name)
		}
		_, held := l.s.owner[name]
		l.s.mu.Unlock()
		if l.s.racy {
			time.Sleep(2 * time.Millisecond) // the window between read and write
		}
		l.s.mu.Lock()
		if l.s.racy {
			held = false // it decided on what it read
		} else {
			_, held = l.s.owner[name]
		}
		if !held {
			// The lease runs from the grant, as a TTL from the write;
			// the client counts it from its invocation.
			exp := time.Now().Add(l.s.lease)
			l.s.owner[name] = owner
			l.s.exp[name] = exp
			l.s.token++
			g := workload.Grant{Lock: name, Owner: owner}
			if l.s.lease > 0 {
				g.Lease = exp.Sub(start)
			}
			if l.s.fenced {
				g.Token = l.s.token
			}
			l.s.mu.Unlock()
			return g, nil
		}
		l.s.mu.Unlock()
		select {
		case <-ctx.Done():
			return workload.Grant{}, fmt.Errorf("%w: %w", workload.ErrNotAcquired, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

func (l memLock) Release(ctx context.Context, g workload.Grant) error {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.s.owner[g.Lock] != g.Owner {
		return workload.ErrNotHeld
	}
	delete(l.s.owner, g.Lock)
	return nil
}

type memSet struct {
	mu       sync.Mutex
	sets     map[string][]int64
	fence    map[string]int64
	anyToken bool
}

func (s *memSet) Read(ctx context.Context, lock string) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sets[lock]), nil
}

func (s *memSet) Add(ctx context.Context, lock string, elem, token int64, before func(context.Context) error) error {
	if s.anyToken {
		token = 0
	}
	if token > 0 {
		s.mu.Lock()
		if token < s.fence[lock] {
			s.mu.Unlock()
			return workload.ErrStaleToken
		}
		s.fence[lock] = token
		s.mu.Unlock()
	}
	set, _ := s.Read(ctx, lock)
	if err := before(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if token > 0 && token < s.fence[lock] {
		return workload.ErrStaleToken
	}
	s.sets[lock] = append(set, elem)
	return nil
}

func memRecipe(name string, promise history.Promise, l *memLocks) Recipe {
	return Recipe{Name: name, Promise: promise, Setup: func(context.Context, Env, *Test) (workload.NewLockFunc, workload.Resource, func(), error) {
		l.owner, l.exp = map[string]string{}, map[string]time.Time{}
		res := &memSet{sets: map[string][]int64{}, fence: map[string]int64{}, anyToken: l.anyToken}
		return func(int, workload.Clock) (workload.Lock, error) { return memLock{l}, nil }, res, func() {}, nil
	}}
}

// The whole pipeline without a cluster: workload and client nemesis on
// in-memory locks, history on disk, checker verdict. Each case is one that
// the jepsen matrix asserts on Cassandra.
func TestRunVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs take seconds")
	}
	tests := []struct {
		name     string
		recipe   Recipe
		nemesis  []string
		want     checker.Verdict
		workload string
	}{
		{"racy, no faults", memRecipe("racy", history.PromiseMutex, &memLocks{racy: true}), nil, checker.Invalid, ""},
		{"mutex, no faults", memRecipe("mutex", history.PromiseMutex, &memLocks{}), nil, checker.Valid, ""},
		{"lease, client pause", memRecipe("lease", history.PromiseMutex, &memLocks{lease: 200 * time.Millisecond}), []string{"client-pause"}, checker.Invalid, ""},
		{"lease fenced, client pause", memRecipe("lease-fenced", history.PromiseFenced, &memLocks{lease: 200 * time.Millisecond, fenced: true}), []string{"client-pause"}, checker.Valid, ""},
		{"lease fenced, resource accepts any token, client pause", memRecipe("lease-fenced-broken", history.PromiseFenced, &memLocks{lease: 200 * time.Millisecond, fenced: true, anyToken: true}), []string{"client-pause"}, checker.Invalid, ""},
		{"leader, mutex, no faults", memRecipe("mutex", history.PromiseMutex, &memLocks{}), nil, checker.Valid, workload.ShapeLeader},
		{"leader, lease, client pause", memRecipe("lease", history.PromiseMutex, &memLocks{lease: 200 * time.Millisecond}), []string{"client-pause"}, checker.Invalid, workload.ShapeLeader},
		{"leader, lease fenced, client pause", memRecipe("lease-fenced", history.PromiseFenced, &memLocks{lease: 200 * time.Millisecond, fenced: true}), []string{"client-pause"}, checker.Valid, workload.ShapeLeader},
		{"leader, lease fenced, resource accepts any token, client pause", memRecipe("lease-fenced-broken", history.PromiseFenced, &memLocks{lease: 200 * time.Millisecond, fenced: true, anyToken: true}), []string{"client-pause"}, checker.Invalid, workload.ShapeLeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var prog strings.Builder
			out, err := Run(context.Background(), nil, memStore{t.TempDir()}, Test{
				Recipe: tt.recipe, Spec: spec.Spec{Nemesis: tt.nemesis, Workload: tt.workload, Clients: 4, Time: 2500 * time.Millisecond, Seed: 5,
					Interval: 300 * time.Millisecond, Quiet: 100 * time.Millisecond, PauseExtra: 300 * time.Millisecond},
				Progress: &prog,
			})
			if err != nil {
				t.Fatal(err)
			}
			if out.Verdict != tt.want {
				t.Errorf("verdict %s, want %s (anomalies %+v)", out.Verdict, tt.want, out.Result.Anomalies)
			}
			kinds := map[string]int{}
			for _, a := range out.Result.Anomalies {
				kinds[a.Kind]++
			}
			t.Logf("%s: %s, anomalies by kind %v", tt.name, out.Verdict, kinds)
			if len(tt.nemesis) > 0 && out.Faults["client-pause"] == 0 {
				t.Errorf("no client pause happened: %v", out.Faults)
			}
			if !strings.Contains(prog.String(), "ops/s") {
				t.Errorf("no progress line: %q", prog.String())
			}
			h, err := os.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(h), "\n")
			if !strings.Contains(first, `"f":"meta"`) || !strings.Contains(first, string(tt.recipe.Promise)) {
				t.Errorf("first line %s is not the meta line with the promise", first)
			}
		})
	}
}

// An interrupted run (SIGINT) still checks and reports what ran. It asks
// for an hour of clients and an hour of quiet: a run that did not stop at
// the cancel would not return before the test binary's time-out.
func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	out, err := Run(ctx, nil, memStore{t.TempDir()}, Test{
		Recipe: memRecipe("mutex", history.PromiseMutex, &memLocks{}), Spec: spec.Spec{Time: time.Hour, Quiet: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict != checker.Valid || out.Ops == 0 {
		t.Errorf("verdict %s after %d ops; want a checked valid run", out.Verdict, out.Ops)
	}
}

func TestMonitorCountsOverlaps(t *testing.T) {
	m := newMonitor(nopRecorder{})
	ops := []history.Op{
		{Process: 0, Type: history.Invoke, F: history.FAcquire, Lock: "a", Time: 0},
		{Process: 0, Type: history.OK, F: history.FAcquire, Lock: "a", Time: 1, LeaseMS: 1},
		{Process: 1, Type: history.Invoke, F: history.FAcquire, Lock: "a", Time: 2},
		{Process: 1, Type: history.OK, F: history.FAcquire, Lock: "a", Time: 3}, // overlaps 0's lease
		{Process: 1, Type: history.Invoke, F: history.FRelease, Lock: "a", Time: 4},
		{Process: 2, Type: history.Invoke, F: history.FAcquire, Lock: "a", Time: 5},
		{Process: 2, Type: history.OK, F: history.FAcquire, Lock: "a", Time: 2e6}, // 0's lease is over
		{Process: 3, Type: history.Invoke, F: history.FAcquire, Lock: "b", Time: 2e6},
		{Process: 3, Type: history.OK, F: history.FAcquire, Lock: "b", Time: 2e6}, // another lock
	}
	for _, op := range ops {
		if _, err := m.Append(op); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.overlaps.Load(); got != 1 {
		t.Errorf("overlaps %d, want 1", got)
	}
}

type nopRecorder struct{}

func (nopRecorder) Append(op history.Op) (history.Op, error) { return op, nil }

// A schedule whose steps follow windows is dealt to its end even when
// that is past the run's time, and the phases line says how long the run
// waited; the same windows placed by the clock are cut at the run's time
// and the step after it is counted undealt. The client pause's stall is
// given, so that each window lasts at least its hold (a lower bound: a
// slow machine only makes the wait longer).
func TestRunWaitsForAFollowingSchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs take seconds")
	}
	ms := func(n int) nemesis.Duration { return nemesis.Duration(time.Duration(n) * time.Millisecond) }
	pause := func(at, hold int, after *nemesis.Follow) nemesis.Step {
		return nemesis.Step{Kind: nemesis.ClientPause, At: ms(at), For: ms(hold), After: after, Value: []byte(`{"ms":50}`)}
	}
	for _, tc := range []struct {
		name    string
		steps   []nemesis.Step
		dealt   int
		undealt int
		waited  bool
	}{
		{"following", []nemesis.Step{pause(0, 600, nil), pause(50, 100, &nemesis.Follow{Step: 1, Phase: nemesis.Ended})}, 2, 0, true},
		{"by the clock", []nemesis.Step{pause(0, 600, nil), pause(650, 100, nil)}, 1, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Run(context.Background(), nil, memStore{t.TempDir()}, Test{
				Recipe:   memRecipe("lease-fenced", history.PromiseFenced, &memLocks{lease: 200 * time.Millisecond, fenced: true}),
				Spec:     spec.Spec{Clients: 4, Time: 200 * time.Millisecond, Seed: 5, Quiet: 50 * time.Millisecond, PauseExtra: 50 * time.Millisecond},
				Schedule: &nemesis.Schedule{Steps: tc.steps},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Faults[nemesis.ClientPause]; got != tc.dealt {
				t.Errorf("%d client pauses dealt, want %d", got, tc.dealt)
			}
			p := out.Phases
			if p.Undealt != tc.undealt || (p.ScheduleWaitMS > 0) != tc.waited {
				t.Errorf("phases %+v: want undealt %d, waited %v", p, tc.undealt, tc.waited)
			}
			if tc.waited && (p.FaultsMS < 650 || !strings.Contains(p.String(), "past the requested time, dealing the rest of its faults")) {
				t.Errorf("faults ran %d ms (want 650 or more: the first hold and the second's offset): %s", p.FaultsMS, p)
			}
		})
	}
}

// EveryKind runs a drawn run past its time until each of its kinds was
// dealt once: a run far shorter than its interval deals none without it
// and both with it. A schedule deals its own steps and refuses it.
func TestRunEveryKind(t *testing.T) {
	if testing.Short() {
		t.Skip("runs take seconds")
	}
	kinds := []string{nemesis.ClientPause, nemesis.ClientClock}
	for _, every := range []bool{false, true} {
		t.Run(fmt.Sprintf("every-kind=%v", every), func(t *testing.T) {
			out, err := Run(context.Background(), nil, memStore{t.TempDir()}, Test{
				Recipe: memRecipe("lease-fenced", history.PromiseFenced, &memLocks{lease: 200 * time.Millisecond, fenced: true}),
				Spec: spec.Spec{Nemesis: kinds, Clients: 3, Time: 100 * time.Millisecond, Interval: 2 * time.Second, Seed: 3,
					Quiet: 50 * time.Millisecond, PauseExtra: 50 * time.Millisecond, EveryKind: every},
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range kinds {
				if dealt := out.Faults[k] > 0; dealt != every {
					t.Errorf("%s dealt %d times, want dealt: %v (faults %v, phases %s)", k, out.Faults[k], every, out.Faults, out.Phases)
				}
			}
			if every && out.Phases.Undealt != 0 {
				t.Errorf("phases %s: %d kinds undealt", out.Phases, out.Phases.Undealt)
			}
		})
	}
	_, err := Run(context.Background(), nil, memStore{t.TempDir()}, Test{
		Recipe:   memRecipe("lease-fenced", history.PromiseFenced, &memLocks{lease: 200 * time.Millisecond, fenced: true}),
		Spec:     spec.Spec{Clients: 3, Time: 100 * time.Millisecond, EveryKind: true},
		Schedule: &nemesis.Schedule{Steps: []nemesis.Step{{Kind: nemesis.ClientPause, For: nemesis.Duration(100 * time.Millisecond)}}},
	})
	if err == nil || !strings.Contains(err.Error(), "--every-kind") {
		t.Errorf("a schedule with --every-kind: err %v, want a refusal naming --every-kind", err)
	}
}

// Two runs of one name started in the same second in stores of their own
// get run IDs, and so lock names, of their own.
func TestUniqueRunID(t *testing.T) {
	base := "20991231T235959"
	ids := map[string]bool{}
	for range 3 {
		ids[uniqueRunID(base)] = true
	}
	if len(ids) != 3 || !ids[base] || !ids[base+".2"] || !ids[base+".3"] {
		t.Errorf("run IDs %v, want %s, %[2]s.2 and %[2]s.3", ids, base)
	}
}
