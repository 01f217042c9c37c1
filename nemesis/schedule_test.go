package nemesis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// timedRec stamps each line with the time since it was made, as
// history.Writer does.
type timedRec struct {
	memRec
	once  sync.Once
	start time.Time
}

func (r *timedRec) Append(op history.Op) (history.Op, error) {
	r.once.Do(func() { r.start = time.Now() })
	op.Time = int64(time.Since(r.start))
	return r.memRec.Append(op)
}

// runNemesis runs a nemesis over a fake cluster for d and returns its lines.
func runNemesis(t *testing.T, d time.Duration, opts ...Option) []history.Op {
	t.Helper()
	ts, fs := fakeCluster(3)
	ring := newFakeRing("n1", "n2", "n3")
	for i := range ts { // two data centres and a ring with a spare, for every kind
		ts[i].DC = []string{"dc1", "dc1", "dc2"}[i]
		fs[i].ring = ring
	}
	spare := []Target{{Name: "n4", IP: "10.0.0.5", Node: &fakeNode{name: "n4", ring: ring}}}
	rec := &timedRec{}
	rec.Append(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.FMeta}) // time 0: the run's start
	cl := &fakeClients{n: 4, clocks: map[int]time.Duration{}}
	n, err := New(ts, rec, append([]Option{WithInterval(10 * time.Millisecond), WithGateway("10.0.0.1"), WithClients(cl), WithSpares(spare),
		WithClientPauseExtra(time.Millisecond), WithPins(testPins), WithSlowness(fastStalls)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := n.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return rec.all()
}

func starts(ops []history.Op) []history.Op {
	var out []history.Op
	for _, op := range ops {
		if _, start, ok := history.FaultEvent(op.F); ok && start {
			out = append(out, op)
		}
	}
	return out
}

func stops(ops []history.Op) []history.Op {
	var out []history.Op
	for _, op := range ops {
		if _, start, ok := history.FaultEvent(op.F); ok && !start {
			out = append(out, op)
		}
	}
	return out
}

// A schedule taken from a history is that history's faults as they
// happened, and a replay of it (another seed: nothing drawn) deals the same
// faults, in the same order, on the same nodes, with the same parameters.
func TestScheduleReplaysTheFaultsAsTheyHappened(t *testing.T) {
	// Enough windows that every kind starts at least once: the nemesis deals
	// by the clock, so a loaded machine deals fewer in a given time.
	var ops, orig []history.Op
	for d := 1500 * time.Millisecond; d <= 24*time.Second && len(orig) < len(Kinds); d *= 4 {
		ops = runNemesis(t, d, WithKinds(Kinds...), WithSeed(1))
		orig = starts(ops)
	}
	s, err := ScheduleFromHistory(ops)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Steps) != len(orig) || len(orig) < len(Kinds) {
		t.Fatalf("%d steps from %d start lines (%d kinds)", len(s.Steps), len(orig), len(Kinds))
	}
	for i, st := range s.Steps {
		kind, _, _ := history.FaultEvent(orig[i].F)
		if st.Kind != kind || !bytes.Equal(st.Value, orig[i].Value) || strings.Join(st.Nodes, ",") != orig[i].Node {
			t.Errorf("step %d %+v, start line %+v", i, st, orig[i])
		}
		if st.At.D() != time.Duration(orig[i].Time).Round(time.Millisecond) || st.For < 0 {
			t.Errorf("step %d at %v for %v, start line at %v", i, st.At.D(), st.For.D(), time.Duration(orig[i].Time))
		}
	}
	// Through a file a user could edit.
	path := filepath.Join(t.TempDir(), "schedule.json")
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadSchedule(path)
	if err != nil {
		t.Fatal(err)
	}
	replay := starts(runNemesis(t, s.End()+3*time.Second, WithSchedule(loaded), WithSeed(99))) // room for a loaded machine
	if len(replay) != len(orig) {
		t.Fatalf("replay dealt %d faults, the run %d", len(replay), len(orig))
	}
	for i := range orig {
		if replay[i].F != orig[i].F || replay[i].Node != orig[i].Node {
			t.Errorf("fault %d: replay %s on %q, run %s on %q", i, replay[i].F, replay[i].Node, orig[i].F, orig[i].Node)
		}
		// A client pause stalls as long as it did (the fake's holder is
		// always client 0).
		if !bytes.Equal(replay[i].Value, orig[i].Value) {
			t.Errorf("fault %d (%s): replay %s, run %s", i, orig[i].F, replay[i].Value, orig[i].Value)
		}
		// Dealt in order, each no earlier than its offset.
		if time.Duration(replay[i].Time) < s.Steps[i].At.D() {
			t.Errorf("fault %d at %v, before its offset %v", i, time.Duration(replay[i].Time), s.Steps[i].At.D())
		}
	}
}

// An edited schedule is dealt as edited: a step dropped is not dealt, a
// window shortened is shorter, a changed parameter is used.
func TestScheduleAsEdited(t *testing.T) {
	s := Schedule{Steps: []Step{
		{Kind: Pause, At: Duration(10 * time.Millisecond), For: Duration(20 * time.Millisecond), Nodes: []string{"n2"}, Value: []byte(`{"how":"docker"}`)},
		{Kind: ClientClock, At: Duration(50 * time.Millisecond), For: Duration(20 * time.Millisecond), Value: []byte(`{"client":3,"offset":"-7s"}`)},
	}}
	// Room for a loaded machine: there the first step was seen dealt 270 ms
	// late, and a 300 ms run then ended before the second.
	ops := runNemesis(t, s.End()+3*time.Second, WithSchedule(s))
	got := starts(ops)
	if len(got) != 2 || got[0].Node != "n2" || string(got[0].Value) != `{"how":"docker"}` || string(got[1].Value) != `{"client":3,"offset":"-7s"}` {
		t.Errorf("dealt %+v", got)
	}
}

func TestScheduleBadInput(t *testing.T) {
	if _, err := ScheduleFromHistory([]history.Op{{Process: 1, Type: history.Invoke, F: history.FAcquire}}); !errors.Is(err, ErrNoFaults) {
		t.Errorf("a history without faults: %v", err)
	}
	dir := t.TempDir()
	for name, body := range map[string]string{
		"not json":     "hello",
		"unknown kind": `{"steps":[{"kind":"meteor","at":"1s","for":"1s"}]}`,
		"no steps":     `{"steps":[]}`,
		"bad duration": `{"steps":[{"kind":"pause","at":"soon","for":"1s"}]}`,
		"extra field":  `{"steps":[{"kind":"pause","at":"1s","for":"1s","when":"now"}]}`,
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadSchedule(p); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	// A kind the run cannot serve is refused before anything starts.
	ts, _ := fakeCluster(3)
	_, err := New(ts, &memRec{}, WithSchedule(Schedule{Steps: []Step{{Kind: ClientPause, For: Duration(time.Second)}}}))
	if err == nil {
		t.Error("a client kind without clients was accepted from a schedule")
	}
	// A node the cluster does not have.
	_, err = New(ts, &memRec{}, WithSchedule(Schedule{Steps: []Step{{Kind: Kill, For: Duration(time.Millisecond), Nodes: []string{"n9"}}}}))
	if err == nil || !strings.Contains(err.Error(), "n9") {
		t.Errorf("a node the cluster lacks: %v", err)
	}
}

// restless never rests while the nemesis waits: it tells the test of each
// step asked of it and keeps the step's callback, so that the test can let
// the client rest too late.
type restless struct {
	fakeClients
	asked chan func()
}

func (r *restless) SetClientClockAtRest(i int, d time.Duration, stepped func()) error {
	if err := r.SetClientClock(i, d); err != nil { // pending until the client rests
		return err
	}
	r.asked <- stepped
	return nil
}

// A client clock whose client does not rest while the nemesis waits did
// not take effect: no window is drawn for it, its pending step is taken
// back, and a rest that comes after the nemesis gave up writes nothing.
func TestClientClockStartsWhenItSteps(t *testing.T) {
	ts, _ := fakeCluster(3)
	rec := &timedRec{}
	cl := &restless{fakeClients: fakeClients{n: 4, clocks: map[int]time.Duration{}}, asked: make(chan func(), 1)}
	n, err := New(ts, rec, WithKinds(ClientClock), WithClients(cl), WithInterval(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	stepped := <-cl.asked // the step was asked for: the nemesis waits for the rest
	cancel()
	<-done
	stepped() // the client rests at last, after the run
	for _, op := range rec.all() {
		if op.F == history.StartF(ClientClock) || op.F == history.StopF(ClientClock) {
			t.Errorf("%s written for a step that never came", op.F)
		}
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for i, d := range cl.clocks {
		if d != 0 {
			t.Errorf("client %d left stepped by %v", i, d)
		}
	}
}

// An overlapping step starts inside the window before it (a coordinator
// cut during a bootstrap); a plain step after them waits for both to end.
// The history's schedule marks the overlap again, so that a replay deals
// it the same way.
func TestScheduleOverlap(t *testing.T) {
	ms := func(n int) Duration { return Duration(time.Duration(n) * time.Millisecond) }
	// Wide margins: on a loaded machine the test's timers fire hundreds
	// of milliseconds late, all at once.
	s := Schedule{Steps: []Step{
		{Kind: Pause, At: ms(10), For: ms(1500), Nodes: []string{"n2"}},
		{Kind: Kill, At: ms(40), For: ms(30), Overlap: true, Nodes: []string{"n3"}},
		{Kind: ClientPause, At: ms(50), For: ms(10)},
	}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	ops := runNemesis(t, 2500*time.Millisecond, WithSchedule(s))
	at := map[string]int64{}
	for _, op := range ops {
		at[op.F] = op.Time
	}
	if at[history.StartF(Kill)] == 0 || at[history.StartF(Kill)] > at[history.StopF(Pause)] {
		t.Errorf("the overlapping kill was not dealt inside the pause: %v", at)
	}
	if at[history.StartF(ClientPause)] < at[history.StopF(Pause)] {
		t.Errorf("the plain step started before the windows before it ended: %v", at)
	}
	got, err := ScheduleFromHistory(ops)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Steps) != 3 || got.Steps[0].Overlap || !got.Steps[1].Overlap || got.Steps[2].Overlap {
		t.Errorf("schedule from the history: %+v", got.Steps)
	}
	// Windows pushed late by a plain step that waited (the client pause
	// waits for the long pause) still keep one window of a kind at a time:
	// the last kill, due inside the one before it by then, waits for it.
	ops = runNemesis(t, 900*time.Millisecond, WithSchedule(Schedule{Steps: []Step{
		{Kind: Pause, At: ms(0), For: ms(200), Nodes: []string{"n1"}},
		{Kind: ClientPause, At: ms(20), For: ms(10)},
		{Kind: Kill, At: ms(30), For: ms(100), Overlap: true, Nodes: []string{"n2"}},
		{Kind: Kill, At: ms(140), For: ms(10), Overlap: true, Nodes: []string{"n3"}},
	}}))
	var kills []string
	for _, op := range ops {
		if k, _, ok := history.FaultEvent(op.F); ok && k == Kill {
			kills = append(kills, op.F+" "+op.Node)
		}
	}
	if want := []string{"start-kill n2", "stop-kill n2", "start-kill n3", "stop-kill n3"}; !slices.Equal(kills, want) {
		t.Errorf("kill windows %v, want %v", kills, want)
	}
	for name, bad := range map[string][]Step{
		"first step overlaps": {{Kind: Kill, For: ms(10), Overlap: true}},
		"overlaps its own kind": {{Kind: Kill, For: ms(100)},
			{Kind: Kill, At: ms(50), For: ms(10), Overlap: true}},
	} {
		if err := (Schedule{Steps: bad}).Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
}

// TestOverlapsOnOneNode: a user's schedule may overlap faults on one node.
// A cut reaches a paused node (its rules change beside the freeze), and a
// pause whose node a kill ended and restarted, or still holds down, stops
// with nothing to resume; each window keeps its start and stop lines.
func TestOverlapsOnOneNode(t *testing.T) {
	ms := func(n int) Duration { return Duration(time.Duration(n) * time.Millisecond) }
	docker, jvm := json.RawMessage(`{"how":"docker"}`), json.RawMessage(`{"how":"jvm"}`)
	for _, tc := range []struct {
		name  string
		steps []Step
	}{
		{"cut inside a container pause", []Step{
			{Kind: Pause, For: ms(600), Nodes: []string{"n1"}, Value: docker},
			{Kind: Partition, At: ms(50), For: ms(100), Overlap: true,
				Value: json.RawMessage(`{"kind":"isolate","grudge":{"n1":["n2","n3"],"n2":["n1"],"n3":["n1"]}}`)},
		}},
		{"kill inside a container pause", []Step{
			{Kind: Pause, For: ms(600), Nodes: []string{"n1"}, Value: docker},
			{Kind: Kill, At: ms(50), For: ms(100), Overlap: true, Nodes: []string{"n1"}},
		}},
		{"JVM pause ending inside a kill", []Step{
			{Kind: Pause, For: ms(150), Nodes: []string{"n1"}, Value: jvm},
			{Kind: Kill, At: ms(50), For: ms(500), Overlap: true, Nodes: []string{"n1"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops := runNemesis(t, 2*time.Second, WithSchedule(Schedule{Steps: tc.steps}))
			var lines []string
			for _, op := range ops {
				if _, _, ok := history.FaultEvent(op.F); ok {
					lines = append(lines, op.F+" "+op.Node)
					if op.F == history.StartF(Partition) {
						var v PartitionStart
						if err := json.Unmarshal(op.Value, &v); err != nil || len(v.Grudge["n1"]) != 2 {
							t.Errorf("the paused n1 took no rule: %s", op.Value)
						}
					}
				}
			}
			for _, s := range tc.steps {
				for _, f := range []string{history.StartF(s.Kind), history.StopF(s.Kind)} {
					if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, f+" ") }) {
						t.Errorf("no %s line: %v", f, lines)
					}
				}
			}
		})
	}
}
