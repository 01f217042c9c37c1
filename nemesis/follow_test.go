package nemesis

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// followRun deals s over three fake members and the spare n4, whose
// movements stream for slow each, within limit; it returns the lines and
// whether Run returned before limit (a schedule that follows its windows
// returns once its last window ended).
func followRun(t *testing.T, s Schedule, slow map[string]time.Duration, limit time.Duration, seed int64) ([]history.Op, bool) {
	t.Helper()
	ts, fs := fakeCluster(3)
	ring := newFakeRing("n1", "n2", "n3")
	ring.slow = slow
	for _, f := range fs {
		f.ring = ring
	}
	rec := &timedRec{}
	rec.Append(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.FMeta}) // time 0: the run's start
	n, err := New(ts, rec, WithSchedule(s), WithSeed(seed), WithSpares([]Target{{Name: "n4", Node: &fakeNode{name: "n4", ring: ring}}}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := n.Run(ctx); err != nil {
		t.Fatal(err)
	}
	early := ctx.Err() == nil
	if u := n.Undealt(); early && u != 0 {
		t.Errorf("Run returned early with %d steps undealt", u)
	}
	return rec.all(), early
}

// line is the i-th (from 0) line of f among ops.
func line(t *testing.T, ops []history.Op, f string, i int) history.Op {
	t.Helper()
	for _, op := range ops {
		if op.F == f {
			if i == 0 {
				return op
			}
			i--
		}
	}
	t.Fatalf("no line %s in %v", f, fs(ops))
	return history.Op{}
}

func fs(ops []history.Op) []string {
	var out []string
	for _, op := range ops {
		out = append(out, op.F+" "+op.Node)
	}
	return out
}

// A step that follows a window starts its offset after the moment that
// window reached the phase, whatever the clock says: a kill after a join's
// streaming waits for a bootstrap that streams long (here 300 ms, and the
// kill's own offset is 40 ms: placed by the clock it would land in the
// stream). The moments are read from the history (start line, stop line,
// the stop's streamed_ms), so each bound below is a lower one: a loaded
// machine only makes the follower later.
func TestScheduleFollowsWindows(t *testing.T) {
	ms := func(n int) Duration { return Duration(time.Duration(n) * time.Millisecond) }
	const stream = 300 * time.Millisecond
	join := Step{Kind: Join, At: ms(0), For: ms(500), Value: []byte(`{"node":"n4"}`)}
	for _, tc := range []struct {
		phase Phase
		// anchor is the moment the kill follows, from the join's lines.
		anchor func(start, stop history.Op, v history.MemberStop) time.Duration
	}{
		{Started, func(start, _ history.Op, _ history.MemberStop) time.Duration { return time.Duration(start.Time) }},
		{Streamed, func(start, _ history.Op, v history.MemberStop) time.Duration {
			return time.Duration(start.Time) + time.Duration(v.StreamedMS)*time.Millisecond
		}},
		{Ended, func(_, stop history.Op, _ history.MemberStop) time.Duration { return time.Duration(stop.Time) }},
	} {
		t.Run(string(tc.phase), func(t *testing.T) {
			s := Schedule{Steps: []Step{join,
				{Kind: Kill, After: &Follow{Step: 1, Phase: tc.phase}, At: ms(40), For: ms(20), Overlap: true, Nodes: []string{"n1"}},
				// A chain: the pause follows the kill's end.
				{Kind: Pause, After: &Follow{Step: 2, Phase: Ended}, At: ms(30), For: ms(20), Overlap: true, Nodes: []string{"n2"}},
			}}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			ops, early := followRun(t, s, map[string]time.Duration{"join n4": stream}, time.Minute, 1)
			if !early {
				t.Fatal("the schedule was not done within a minute")
			}
			start, stop := line(t, ops, history.StartF(Join), 0), line(t, ops, history.StopF(Join), 0)
			var v history.MemberStop
			if err := json.Unmarshal(stop.Value, &v); err != nil {
				t.Fatal(err)
			}
			if v.StreamedMS < stream.Milliseconds() {
				t.Fatalf("the join streamed in %d ms, the fake takes %v", v.StreamedMS, stream)
			}
			kill, killEnd := line(t, ops, history.StartF(Kill), 0), line(t, ops, history.StopF(Kill), 0)
			if got, want := time.Duration(kill.Time), tc.anchor(start, stop, v)+40*time.Millisecond; got < want {
				t.Errorf("kill at %v, before the join's %s plus 40ms (%v)", got, tc.phase, want)
			}
			if tc.phase != Started && time.Duration(kill.Time) < time.Duration(start.Time)+stream {
				t.Errorf("kill at %v, inside the join's stream (%v from %v)", time.Duration(kill.Time), stream, time.Duration(start.Time))
			}
			if kill.Node != "n1" {
				t.Errorf("kill of %q, want n1", kill.Node)
			}
			if pause := line(t, ops, history.StartF(Pause), 0); time.Duration(pause.Time) < time.Duration(killEnd.Time)+30*time.Millisecond {
				t.Errorf("pause at %v, before the kill's end %v plus 30ms", time.Duration(pause.Time), time.Duration(killEnd.Time))
			}
		})
	}
}

// A step whose moment never comes (the window it follows ended without
// streaming: its bootstrap failed for good) is not dealt: a failed start
// says why, and the steps that follow it are not dealt either. The run
// does not wait for them.
func TestScheduleFollowsAMomentThatNeverCame(t *testing.T) {
	ms := func(n int) Duration { return Duration(time.Duration(n) * time.Millisecond) }
	ts, fs := fakeCluster(3)
	ring := newFakeRing("n1", "n2", "n3")
	ring.fail, ring.stuck = map[string]bool{"join n4": true}, true
	for _, f := range fs {
		f.ring = ring
	}
	rec := &timedRec{}
	n, err := New(ts, rec, WithSchedule(Schedule{Steps: []Step{
		{Kind: Join, For: ms(50), Value: []byte(`{"node":"n4"}`)},
		{Kind: Kill, After: &Follow{Step: 1, Phase: Streamed}, At: ms(10), For: ms(10), Overlap: true, Nodes: []string{"n1"}},
		{Kind: Pause, After: &Follow{Step: 2, Phase: Ended}, For: ms(10), Nodes: []string{"n2"}},
	}}), WithSpares([]Target{{Name: "n4", Node: &fakeNode{name: "n4", ring: ring}}}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = n.Run(ctx) // the join's stop reports its stuck movement
	if ctx.Err() != nil {
		t.Fatal("Run waited for steps whose moment never came")
	}
	if n.Undealt() != 2 {
		t.Errorf("undealt %d, want 2 (the kill and the pause)", n.Undealt())
	}
	ops := rec.all()
	for _, k := range []string{Kill, Pause} {
		if f := line(t, ops, history.StartFailedF(k), 0); !strings.Contains(string(f.Value), "never reached") {
			t.Errorf("%s: failed start %s, want why", k, f.Value)
		}
		for _, op := range ops {
			if op.F == history.StartF(k) {
				t.Errorf("%s dealt after a moment that never came", k)
			}
		}
	}
}

// A bad reference is refused before anything runs, with one line naming
// the step.
func TestScheduleFollowBadReferences(t *testing.T) {
	ms := func(n int) Duration { return Duration(time.Duration(n) * time.Millisecond) }
	join := Step{Kind: Join, For: ms(100)}
	kill := func(f Follow) Step { return Step{Kind: Kill, For: ms(10), Overlap: true, After: &f} }
	for _, tc := range []struct {
		name  string
		steps []Step
		want  string
	}{
		{"step 0", []Step{join, kill(Follow{Step: 0, Phase: Started})}, "step 2 (kill): follows step 0, which the schedule does not have"},
		{"out of range", []Step{join, kill(Follow{Step: 9, Phase: Started})}, "follows step 9, which the schedule does not have (steps 1-2)"},
		{"itself", []Step{join, kill(Follow{Step: 2, Phase: Started})}, "follows step 2, which is not before it"},
		{"forward", []Step{join, kill(Follow{Step: 3, Phase: Ended}), {Kind: Pause, For: ms(10)}}, "follows step 3, which is not before it"},
		{"streamed of a kill", []Step{{Kind: Kill, For: ms(10)}, {Kind: Pause, For: ms(10), After: &Follow{Step: 1, Phase: Streamed}}}, `follows step 1's "streamed", which a kill window never reports`},
		{"unknown phase", []Step{join, kill(Follow{Step: 1, Phase: "halfway"})}, `phase "halfway": want one of started, streamed, ended`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Schedule{Steps: tc.steps}.Validate()
			if err == nil {
				t.Fatal("valid")
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want one line with %q", msg, tc.want)
			}
			ts, _ := fakeCluster(3)
			if _, err := New(ts, &memRec{}, WithSchedule(Schedule{Steps: tc.steps})); err == nil {
				t.Error("New accepted it")
			}
		})
	}
}

// A schedule placed by the clock alone, with no range movement, deals as
// it always did: the file has no "after", the dealer waits for the run's
// end after its last step, and the same seed draws the same faults. One
// that follows its windows, or has a range movement among its steps,
// draws the same faults for the same seed too (the steps are dealt in
// their order either way) and is done when its last window ends: the run
// deals it to the end (DealtInFull).
func TestScheduleByTheClockUnchanged(t *testing.T) {
	ms := func(n int) Duration { return Duration(time.Duration(n) * time.Millisecond) }
	withMovement := Schedule{Steps: []Step{
		{Kind: Join, At: ms(0), For: ms(60)},
		{Kind: Kill, At: ms(20), For: ms(10), Overlap: true},
		{Kind: Pause, At: ms(100), For: ms(10)},
	}}
	// One after another: a partition's heal lists iptables rules, which
	// a node killed inside the window would refuse.
	noMovement := Schedule{Steps: []Step{
		{Kind: Partition, At: ms(0), For: ms(30)},
		{Kind: Kill, At: ms(40), For: ms(10)},
		{Kind: Pause, At: ms(100), For: ms(10)},
	}}
	b, err := json.Marshal(withMovement)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "after") {
		t.Errorf("a schedule by the clock writes %s", b)
	}
	var back Schedule
	if err := json.Unmarshal(b, &back); err != nil || back.Follows() || back.End() != 110*time.Millisecond {
		t.Errorf("read back %+v (%v): follows %v, end %v", back, err, back.Follows(), back.End())
	}
	following := Schedule{Steps: []Step{
		withMovement.Steps[0],
		{Kind: Kill, After: &Follow{Step: 1, Phase: Started}, At: ms(20), For: ms(10), Overlap: true},
		{Kind: Pause, After: &Follow{Step: 1, Phase: Ended}, At: ms(10), For: ms(10)},
	}}
	for _, tc := range []struct {
		name  string
		s     Schedule
		early bool // Run returns before the run's end
	}{
		{"by the clock", noMovement, false},
		{"by the clock, a range movement", withMovement, true},
		{"following", following, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.s.DealtInFull() != tc.early {
				t.Errorf("dealt in full %v, want %v", tc.s.DealtInFull(), tc.early)
			}
			// A run that returns once it is dealt gets room to be dealt on
			// a loaded machine (1.5 s was too little at load 44); one by
			// the clock lasts its limit whatever the load.
			limit := 1500 * time.Millisecond
			if tc.early {
				limit = 20 * time.Second
			}
			var dealt [][]string
			for range 2 {
				ops, early := followRun(t, tc.s, nil, limit, 42)
				if early != tc.early {
					t.Errorf("Run returned before the run's end: %v, want %v", early, tc.early)
				}
				var got []string
				for _, op := range starts(ops) {
					got = append(got, op.F+" "+op.Node+" "+string(op.Value))
				}
				dealt = append(dealt, got)
			}
			if len(dealt[0]) != 3 || strings.Join(dealt[0], "|") != strings.Join(dealt[1], "|") {
				t.Errorf("same seed, dealt %q then %q", dealt[0], dealt[1])
			}
		})
	}
}

// A schedule file that follows windows reads as written.
func TestScheduleFollowJSON(t *testing.T) {
	var s Schedule
	body := `{"steps":[{"kind":"join","at":"2s","for":"150s","value":{"node":"n5"}},` +
		`{"kind":"kill","after":{"step":1,"phase":"streamed"},"at":"10s","for":"8s","overlap":true,"nodes":["n1"]}]}`
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if f := s.Steps[1].After; f == nil || f.Step != 1 || f.Phase != Streamed || s.Steps[1].At.D() != 10*time.Second {
		t.Errorf("step 2 %+v", s.Steps[1])
	}
	if !s.Follows() || s.End() != 152*time.Second {
		t.Errorf("follows %v, end %v, want the join's 152s (the kill's lower bound is 20s)", s.Follows(), s.End())
	}
}

// A leave placed by the clock after a join that streams long is dealt
// when the join ends, and the dealer is done then, not at the run's end:
// the run goes on until it is dealt (the rows' membershipCuts, whose
// leave a loaded run used to end before dealing).
func TestScheduleByTheClockWaitsForAMovement(t *testing.T) {
	ms := func(n int) Duration { return Duration(time.Duration(n) * time.Millisecond) }
	s := Schedule{Steps: []Step{
		{Kind: Join, At: ms(0), For: ms(50), Value: []byte(`{"node":"n4"}`)},
		{Kind: Leave, At: ms(60), For: ms(50), Value: []byte(`{"node":"n2"}`)},
	}}
	if err := s.Validate(); err != nil || !s.DealtInFull() {
		t.Fatalf("validate %v, dealt in full %v", err, s.DealtInFull())
	}
	ops, early := followRun(t, s, map[string]time.Duration{"join n4": 300 * time.Millisecond}, time.Minute, 1)
	if !early {
		t.Fatal("the schedule was not done within a minute")
	}
	joined, left := line(t, ops, history.StopF(Join), 0), line(t, ops, history.StartF(Leave), 0)
	if left.Time < joined.Time {
		t.Errorf("leave at %v, before the join ended at %v", time.Duration(left.Time), time.Duration(joined.Time))
	}
	if left.Node != "n2" {
		t.Errorf("leave of %q, want n2", left.Node)
	}
}

// A drawn run of range movements deals each of its kinds once even when
// the first outlasts the run's time (WithFirstRound): each movement
// streams for 300 ms of a 100 ms run, and the second still comes after
// the first; then Run returns by itself, its ctx still live. A run that
// dealt every kind in its time (quick movements, a 400 ms run) is the
// same with the option as without: the same kinds in the same order, no
// kind dealt again after its time, and it returns by itself, every window
// closed.
func TestDrawnMovementsDealEachKindOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		slow time.Duration // each movement's streaming
		time time.Duration // the run's requested time
		want int           // windows dealt; 0: the same as without the option
	}{
		{"first round past the time", 300 * time.Millisecond, 100 * time.Millisecond, 2},
		{"dealt in time", 0, 400 * time.Millisecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// run returns the history and whether Run returned by itself
			// (its ctx, a minute with the option, still live).
			run := func(firstRound bool) ([]history.Op, bool) {
				ts, fs := fakeCluster(3)
				ring := newFakeRing("n1", "n2", "n3")
				ring.slow = map[string]time.Duration{"join n4": tc.slow}
				for _, m := range []string{"n1", "n2", "n3"} {
					ring.slow["decommission "+m] = tc.slow
				}
				for _, f := range fs {
					f.ring = ring
				}
				rec := &timedRec{}
				rec.Append(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.FMeta})
				opts := []Option{WithKinds(Join, Leave), WithSeed(3), WithInterval(20 * time.Millisecond),
					WithSpares([]Target{{Name: "n4", Node: &fakeNode{name: "n4", ring: ring}}})}
				limit := tc.time
				if firstRound {
					timeUp := make(chan struct{})
					time.AfterFunc(tc.time, func() { close(timeUp) })
					opts, limit = append(opts, WithFirstRound(timeUp)), time.Minute
				}
				n, err := New(ts, rec, opts...)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), limit)
				defer cancel()
				_ = n.Run(ctx)
				return rec.all(), ctx.Err() == nil
			}
			kinds := func(ops []history.Op) []string {
				var out []string
				for _, op := range starts(ops) {
					kind, _, _ := history.FaultEvent(op.F)
					out = append(out, kind)
				}
				return out
			}
			with, byItself := run(true)
			without, _ := run(false)
			if !byItself {
				t.Errorf("with the option, Run ran to its ctx's end (a minute) instead of returning once each kind was dealt")
			}
			if s, e := len(starts(with)), len(stops(with)); s != e {
				t.Errorf("with the option, Run returned with %d windows started and %d stopped", s, e)
			}
			if tc.want > 0 {
				// The deck's order is the seed's; what matters is that
				// each kind comes once, where the run cut at its time
				// dealt one.
				got := kinds(with)
				slices.Sort(got)
				if !slices.Equal(got, []string{Join, Leave}) {
					t.Errorf("dealt %v, want each of join and leave once", got)
				}
				if len(kinds(without)) >= 2 {
					t.Errorf("without the option, dealt %v within a %v run whose windows stream %v", kinds(without), tc.time, tc.slow)
				}
				return
			}
			// The same seed deals the same kinds in the same order; how
			// many fit in the time is the scheduler's timing, so one
			// list is the other's prefix.
			got, want := kinds(with), kinds(without)
			if k := min(len(got), len(want)); len(got) < 2 || !slices.Equal(got[:k], want[:k]) {
				t.Errorf("dealt %v with the option, %v without", got, want)
			}
			// A loaded machine can leave a kind undealt at the time: that
			// kind alone may start once after it, and Run returns after
			// its window. A start is recorded a moment after the deal was
			// decided: a kind decided in time may be recorded after it
			// (Run re-checks the time after its sleep, a race no timing
			// here can pin), so the rule asserted is that no kind starts
			// twice after the time. A run without the option deals every
			// 20 ms until its ctx ends.
			late := map[string]int{}
			for _, op := range starts(with) {
				kind, _, _ := history.FaultEvent(op.F)
				if at := time.Duration(op.Time); at > tc.time {
					if late[kind]++; late[kind] > 1 {
						t.Errorf("%s started at %v, its second start after the run's %v", op.F, at, tc.time)
					}
				}
			}
		})
	}
}
