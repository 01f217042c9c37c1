package nemesis

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// A Schedule is the faults of a run as they actually happened, to be dealt
// again in place of random draws (`lockcheck replay`, `run --schedule`):
// each step is one fault window of the history, its kind, when it took
// effect (an offset from the start of the run's faults), how long it lasted,
// its nodes and its start line's value (the kind's own parameters: the
// grudge, the node, the offset, the client, the stall). It is a JSON file a
// user can edit: drop a step, shorten a window, change an offset.
type Schedule struct {
	// Source is where it came from (a run directory); informative.
	Source string `json:"source,omitempty"`
	Steps  []Step `json:"steps"`
}

// Step is one fault of a Schedule. Steps are dealt in order, one at a
// time, as the scheduler deals them: a step whose time has passed when
// the one before it ends starts at once. An overlapping step does not
// wait for the windows before it to end: it starts at its time inside
// them (a coordinator cut during a bootstrap), never inside a window of
// its own kind.
type Step struct {
	Kind string `json:"kind"`
	// At is when it takes effect: from the start of the faults, or, with
	// After, from the moment the earlier step's window reached its phase.
	At      Duration `json:"at"`
	For     Duration `json:"for"` // how long the window lasts
	Overlap bool     `json:"overlap,omitempty"`
	Nodes   []string `json:"nodes,omitempty"`
	// After makes the step follow an earlier step's window instead of the
	// clock: a kill placed by the clock inside a range movement lands in
	// the wrong phase on a loaded machine (a bootstrap starts a minute
	// late and streams for 40-120 s), one placed after the movement's
	// streaming is done does not. Nil: At counts from the start.
	After *Follow `json:"after,omitempty"`
	// Value is the start line's value (history/fault.go's type of the
	// kind): the parameters the kind uses instead of its draws. Empty: the
	// kind draws them as in a run.
	Value json.RawMessage `json:"value,omitempty"`
}

// Follow names the moment a step follows: a phase of an earlier step's
// window, as {"step": 1, "phase": "streamed"} (steps count from 1, as the
// errors name them).
type Follow struct {
	Step  int   `json:"step"`
	Phase Phase `json:"phase"`
}

// Phase is a moment of a fault window that a later step can follow.
type Phase string

const (
	// Started: the window's start took effect (its start line is
	// recorded). Every kind reports it.
	Started Phase = "started"
	// Streamed: the window's first range movement is done streaming (the
	// stop line's streamed_ms; done or failed and completed). Only the
	// membership kinds report it (Kind.Streams).
	Streamed Phase = "streamed"
	// Ended: the window's stop line is recorded. Every kind reports it.
	Ended Phase = "ended"
)

// FollowWait is how far past its requested time a run whose schedule is
// dealt in full (Schedule.DealtInFull) may run to deal it
// (runner.Test.Schedule), or a drawn run of range movements to deal each
// of its kinds once (WithFirstRound): a membership
// window's own bound, since the windows such a schedule follows are range
// movements.
const FollowWait = membershipWait

// Phases are the phases a step can follow, in the order a window reaches
// them.
var Phases = []Phase{Started, Streamed, Ended}

// Duration is a time.Duration written as Go writes it ("1.5s") in JSON.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"1.5s\": %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// D is d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Kinds are the schedule's kinds, each once, in order of first use.
func (s Schedule) Kinds() []string {
	var out []string
	for _, st := range s.Steps {
		if !slices.Contains(out, st.Kind) {
			out = append(out, st.Kind)
		}
	}
	return out
}

// Validate checks what needs no cluster: known kinds, offsets and lengths
// that are not negative, values that are JSON objects.
func (s Schedule) Validate() error {
	if len(s.Steps) == 0 {
		return errors.New("nemesis: the schedule has no steps")
	}
	for i, st := range s.Steps {
		if lookup(st.Kind) == nil {
			return fmt.Errorf("nemesis: schedule step %d: %w", i+1, unknown(st.Kind))
		}
		if st.At < 0 || st.For < 0 {
			return fmt.Errorf("nemesis: schedule step %d (%s): negative time", i+1, st.Kind)
		}
		if v := bytes.TrimSpace(st.Value); len(v) > 0 && v[0] != '{' {
			return fmt.Errorf("nemesis: schedule step %d (%s): value is not a JSON object", i+1, st.Kind)
		}
		if err := s.checkAfter(i); err != nil {
			return err
		}
		if !st.Overlap {
			continue
		}
		if i == 0 {
			return fmt.Errorf("nemesis: schedule step 1 (%s): overlaps no window before it", st.Kind)
		}
		// A kind keeps one window at a time (its stop undoes all of it).
		// A step that follows another has no time to compare before the
		// run: the dealer keeps it out of a window of its kind.
		for j, prev := range s.Steps[:i] {
			if st.After != nil || prev.After != nil {
				continue
			}
			if prev.Kind == st.Kind && prev.At+prev.For > st.At {
				return fmt.Errorf("nemesis: schedule step %d (%s): overlaps step %d, a window of its own kind", i+1, st.Kind, j+1)
			}
		}
	}
	return nil
}

// checkAfter checks step i's After: an earlier step (a step follows only
// one dealt before it, so references cannot form a cycle and the dealer,
// which deals in order, has the moment when it gets there) and a phase
// that step's kind reports.
func (s Schedule) checkAfter(i int) error {
	st := s.Steps[i]
	if st.After == nil {
		return nil
	}
	k := st.After.Step
	if k < 1 || k > len(s.Steps) {
		return fmt.Errorf("nemesis: schedule step %d (%s): follows step %d, which the schedule does not have (steps 1-%d)", i+1, st.Kind, k, len(s.Steps))
	}
	if k >= i+1 {
		return fmt.Errorf("nemesis: schedule step %d (%s): follows step %d, which is not before it (a step follows an earlier one)", i+1, st.Kind, k)
	}
	ref := s.Steps[k-1]
	switch st.After.Phase {
	case Started, Ended:
	case Streamed:
		if kd := lookup(ref.Kind); kd != nil && !kd.Streams {
			return fmt.Errorf("nemesis: schedule step %d (%s): follows step %d's %q, which a %s window never reports (only the membership kinds stream)", i+1, st.Kind, k, Streamed, ref.Kind)
		}
	default:
		return fmt.Errorf("nemesis: schedule step %d (%s): phase %q: want one of %s, %s, %s", i+1, st.Kind, st.After.Phase, Started, Streamed, Ended)
	}
	return nil
}

// Follows says whether a step of the schedule follows another's window
// rather than the clock: the run then lasts until it is dealt (see the
// runner).
func (s Schedule) Follows() bool {
	return slices.ContainsFunc(s.Steps, func(st Step) bool { return st.After != nil })
}

// DealtInFull says whether a run deals the schedule to its end past its
// requested time: when a step follows another's window, or a window is a
// range movement. A movement's length is the cluster's (88-265 s for a
// join on a loaded 2-core machine against 45 s asked), and a plain step
// after it waits for it, so by the clock alone a loaded run ends before
// the steps after a movement are dealt and shows nothing of them.
func (s Schedule) DealtInFull() bool {
	return s.Follows() || MovesRing(s.Kinds())
}

// MovesRing says whether a kind among kinds is a range movement: a drawn
// run of such kinds deals each of them once even past its time
// (WithFirstRound), as a schedule of them is dealt in full.
func MovesRing(kinds []string) bool {
	return slices.ContainsFunc(kinds, func(name string) bool {
		k := lookup(name)
		return k != nil && k.Streams
	})
}

// Overlapping says whether a step of the schedule overlaps the windows
// before it.
func (s Schedule) Overlapping() bool {
	return slices.ContainsFunc(s.Steps, func(st Step) bool { return st.Overlap })
}

// End is when the schedule's last window ends. A step that follows
// another is counted from the earliest its moment can come (the window's
// start for started and streamed, its planned end for ended): a lower
// bound, since streaming takes what it takes.
func (s Schedule) End() time.Duration {
	var end time.Duration
	at := make([]time.Duration, len(s.Steps))
	for i, st := range s.Steps {
		at[i] = st.At.D()
		if f := st.After; f != nil && f.Step >= 1 && f.Step <= i {
			at[i] += at[f.Step-1]
			if f.Phase == Ended {
				at[i] += s.Steps[f.Step-1].For.D()
			}
		}
		end = max(end, at[i]+st.For.D())
	}
	return end
}

// ErrNoFaults is a history without fault events: nothing to replay.
var ErrNoFaults = errors.New("the history has no fault events")

// ScheduleFromHistory is the schedule of a history's fault lines as they
// happened: one step per start line, closed by the next stop of its kind
// (a window never stopped lasts to the end of the faults). Offsets count
// from the start of the run's faults: the phases line's time minus the
// run's total (when the history has one), else its first client operation.
func ScheduleFromHistory(ops []history.Op) (Schedule, error) {
	origin, found := int64(0), false
	for i := len(ops) - 1; i >= 0; i-- {
		if ops[i].Process == history.NemesisProcess && ops[i].F == history.FPhases {
			var ph history.RunPhases
			if json.Unmarshal(ops[i].Value, &ph) == nil && ph.TotalMS > 0 {
				origin, found = ops[i].Time-ph.TotalMS*1e6, true
			}
			break
		}
	}
	if !found {
		for _, op := range ops {
			if op.Process != history.NemesisProcess {
				origin = op.Time
				break
			}
		}
	}
	var s Schedule
	open := map[string][]int{} // kind -> steps open, oldest first
	var end int64
	for _, op := range ops {
		if op.Process != history.NemesisProcess {
			continue
		}
		end = max(end, op.Time)
		kind, start, ok := history.FaultEvent(op.F)
		if !ok {
			continue
		}
		// Milliseconds: what a fault's timing means at this scale, and a
		// file a user reads and edits.
		at := time.Duration(max(op.Time-origin, 0)).Round(time.Millisecond).Nanoseconds()
		if start {
			st := Step{Kind: kind, At: Duration(at), Value: op.Value}
			if op.Node != "" {
				st.Nodes = splitNodes(op.Node)
			}
			open[kind] = append(open[kind], len(s.Steps))
			s.Steps = append(s.Steps, st)
			continue
		}
		if q := open[kind]; len(q) > 0 {
			s.Steps[q[0]].For = Duration(at - s.Steps[q[0]].At.D().Nanoseconds())
			open[kind] = q[1:]
		}
	}
	for _, q := range open {
		for _, i := range q {
			s.Steps[i].For = Duration(time.Duration(max(end-origin-s.Steps[i].At.D().Nanoseconds(), 0)).Round(time.Millisecond))
		}
	}
	if len(s.Steps) == 0 {
		return Schedule{}, ErrNoFaults
	}
	// A window that started before an earlier one ended overlapped it
	// (the scheduler deals one at a time otherwise): the replay does too,
	// unless the earlier one is of its kind (a stop line lost, not two
	// windows at once).
	var until Duration
	for i := range s.Steps {
		st := &s.Steps[i]
		own := slices.ContainsFunc(s.Steps[:i], func(p Step) bool { return p.Kind == st.Kind && p.At+p.For > st.At })
		st.Overlap = i > 0 && st.At < until && !own
		until = max(until, st.At+st.For)
	}
	return s, nil
}

func splitNodes(list string) []string {
	var out []string
	for _, n := range bytes.Split([]byte(list), []byte(",")) {
		if len(n) > 0 {
			out = append(out, string(n))
		}
	}
	return out
}

// LoadSchedule reads a schedule file; a file that is not one is an error
// naming it.
func LoadSchedule(path string) (Schedule, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Schedule{}, fmt.Errorf("nemesis: schedule: %w", err)
	}
	var s Schedule
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Schedule{}, fmt.Errorf("nemesis: schedule %s: %w", path, err)
	}
	if err := s.Validate(); err != nil {
		return Schedule{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Save writes the schedule as indented JSON.
func (s Schedule) Save(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// given decodes the step being dealt's value into the kind's start value:
// ok is false when the fault is drawn (no step, or a step without a value).
func given[T any](e *Env) (T, bool) {
	var v T
	if e.step == nil || len(bytes.TrimSpace(e.step.Value)) == 0 {
		return v, false
	}
	if err := json.Unmarshal(e.step.Value, &v); err != nil {
		return v, false
	}
	return v, true
}

// givenTargets are the step's nodes as targets (nil when the fault is
// drawn or names none); a node the run does not have is an error.
func (e *Env) givenTargets() ([]Target, error) {
	if e.step == nil || len(e.step.Nodes) == 0 {
		return nil, nil
	}
	var out []Target
	for _, n := range e.step.Nodes {
		i := slices.IndexFunc(e.Targets, func(t Target) bool { return t.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("nemesis: the schedule names node %q, which this cluster does not have", n)
		}
		out = append(out, e.Targets[i])
	}
	return out, nil
}
