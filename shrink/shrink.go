// Package shrink searches, by replaying, for the smallest run that still
// fails the same way: fewer faults (delta debugging over the schedule's
// steps), shorter fault windows, fewer clients and locks, a shorter run.
// A failure is probabilistic, so each candidate is tried several times and
// kept at its first catch; the search has a budget of runs and wall time,
// and the minimal candidate's catch rate is measured at the end. The runs
// themselves are the caller's (Try): the search needs no cluster.
package shrink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
)

// Candidate is one run to try: the schedule dealt (no steps: no faults),
// the clients, the lock names and the run's time.
type Candidate struct {
	Schedule nemesis.Schedule
	Clients  int
	Locks    int
	Time     time.Duration
}

// String says the candidate's size: its faults, their windows, clients,
// locks and time.
func (c Candidate) String() string {
	var win time.Duration
	for _, s := range c.Schedule.Steps {
		win += s.For.D()
	}
	return fmt.Sprintf("%d faults (%v of windows), %d clients, %d locks, %v", len(c.Schedule.Steps), win, c.Clients, c.Locks, c.Time)
}

func (c Candidate) clone() Candidate {
	c.Schedule.Steps = slices.Clone(c.Schedule.Steps)
	return c
}

// Try runs a candidate once and says whether it failed the same way (the
// anomaly class the search keeps). An error is a run that could not be
// made (not a valid one): the search stops on it.
type Try func(ctx context.Context, c Candidate) (caught bool, err error)

// Options bound the search.
type Options struct {
	Tries   int           // tries of one candidate before it is given up (default 3)
	Confirm int           // tries of the minimal candidate for its catch rate (default 10)
	MaxRuns int           // runs in all, the confirmation included (default 60)
	MaxWall time.Duration // wall time of the search (default 30 min)
	MinFor  time.Duration // a window is not shortened below this (default 500 ms)
	MinTime time.Duration // nor the run below this (default 5 s)
	Lead    time.Duration // the time before the first fault that is kept (default 2 s: the clients start)
	Log     *slog.Logger
}

func (o *Options) defaults() {
	if o.Tries <= 0 {
		o.Tries = 3
	}
	if o.Confirm <= 0 {
		o.Confirm = 10
	}
	if o.MaxRuns <= 0 {
		o.MaxRuns = 60
	}
	if o.MaxWall <= 0 {
		o.MaxWall = 30 * time.Minute
	}
	if o.MinFor <= 0 {
		o.MinFor = 500 * time.Millisecond
	}
	if o.MinTime <= 0 {
		o.MinTime = 5 * time.Second
	}
	if o.Lead <= 0 {
		o.Lead = 2 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
}

// Result is what the search found.
type Result struct {
	Minimal Candidate
	Caught  int // tries of Minimal that failed the same way
	Tries   int
	Runs    int // runs the search made, the confirmation included
	Wall    time.Duration
	// Exhausted says the budget ran out before the search was done: the
	// minimal candidate is the smallest found, not a local minimum.
	Exhausted bool
}

// ErrBudget is the budget running out.
var ErrBudget = errors.New("shrink: budget spent")

type search struct {
	try   Try
	o     Options
	runs  int
	start time.Time
}

func (s *search) spent() bool {
	return s.runs >= s.o.MaxRuns || time.Since(s.start) >= s.o.MaxWall
}

// fails tries c up to Tries times (budget allowing) and says whether one
// of them failed the same way.
func (s *search) fails(ctx context.Context, c Candidate) (bool, error) {
	for range s.o.Tries {
		if s.spent() {
			return false, ErrBudget
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		s.runs++
		caught, err := s.try(ctx, c)
		if err != nil {
			return false, err
		}
		if caught {
			s.o.Log.Info("shrink: candidate fails", "candidate", c.String(), "runs", s.runs)
			return true, nil
		}
	}
	s.o.Log.Info("shrink: candidate passes", "candidate", c.String(), "runs", s.runs)
	return false, nil
}

// Search shrinks start, which failed the same way once (the run being
// shrunk). The minimal candidate is the smallest that failed at least once
// within its tries; its catch rate is measured over Confirm tries last.
func Search(ctx context.Context, start Candidate, try Try, o Options) (Result, error) {
	o.defaults()
	if start.Schedule.Follows() {
		// Dropping a step renumbers the steps that follow it, and moving
		// the faults earlier would move a delay: the search works on a
		// schedule by the clock, as a history's is (replay, shrink DIR).
		return Result{}, errors.New("shrink: the schedule has steps that follow other windows (after): shrink the schedule of a run's history instead")
	}
	s := &search{try: try, o: o, start: time.Now()}
	best := start.clone()
	err := s.shrink(ctx, &best)
	res := Result{Minimal: best}
	switch {
	case errors.Is(err, ErrBudget):
		res.Exhausted = true
	case err != nil:
		res.Runs, res.Wall = s.runs, time.Since(s.start)
		return res, err
	}
	// The catch rate of the minimal candidate: its own tries, beyond the
	// budget of the search (the rate is what the user reads).
	for range o.Confirm {
		if err := ctx.Err(); err != nil {
			break
		}
		s.runs++
		res.Tries++
		caught, err := try(ctx, best)
		if err != nil {
			res.Runs, res.Wall = s.runs, time.Since(s.start)
			return res, err
		}
		if caught {
			res.Caught++
		}
	}
	res.Runs, res.Wall = s.runs, time.Since(s.start)
	return res, nil
}

// shrink runs the phases in order; each keeps what still fails.
func (s *search) shrink(ctx context.Context, best *Candidate) error {
	for _, phase := range []func(context.Context, *Candidate) error{s.steps, s.shift, s.windows, s.clients, s.locks, s.time} {
		if err := phase(ctx, best); err != nil {
			return err
		}
	}
	return nil
}

// keep tries c and makes it the best when it fails the same way.
func (s *search) keep(ctx context.Context, best *Candidate, c Candidate) (bool, error) {
	ok, err := s.fails(ctx, c)
	if err != nil || !ok {
		return false, err
	}
	*best = c
	return true, nil
}

// steps is delta debugging (ddmin) over the schedule's steps, after a try
// of none at all (an anomaly no fault explains needs none).
func (s *search) steps(ctx context.Context, best *Candidate) error {
	if len(best.Schedule.Steps) == 0 {
		return nil
	}
	none := best.clone()
	none.Schedule.Steps = nil
	if ok, err := s.keep(ctx, best, none); err != nil || ok {
		return err
	}
	n := 2
	for len(best.Schedule.Steps) >= 2 {
		steps := best.Schedule.Steps
		chunks := split(steps, n)
		reduced := false
		for _, ch := range chunks { // a chunk alone
			c := best.clone()
			c.Schedule.Steps = slices.Clone(ch)
			ok, err := s.keep(ctx, best, c)
			if err != nil {
				return err
			}
			if ok {
				n, reduced = 2, true
				break
			}
		}
		if !reduced && n > 2 { // a chunk left out
			for i := range chunks {
				c := best.clone()
				c.Schedule.Steps = complement(chunks, i)
				ok, err := s.keep(ctx, best, c)
				if err != nil {
					return err
				}
				if ok {
					n, reduced = max(n-1, 2), true
					break
				}
			}
		}
		if !reduced {
			if n >= len(steps) {
				return nil
			}
			n = min(2*n, len(steps))
		}
	}
	return nil
}

// split cuts steps into n chunks of nearly equal length.
func split(steps []nemesis.Step, n int) [][]nemesis.Step {
	n = min(n, len(steps))
	var out [][]nemesis.Step
	for i := range n {
		out = append(out, steps[i*len(steps)/n:(i+1)*len(steps)/n])
	}
	return out
}

func complement(chunks [][]nemesis.Step, skip int) []nemesis.Step {
	var out []nemesis.Step
	for i, ch := range chunks {
		if i != skip {
			out = append(out, ch...)
		}
	}
	return out
}

// shift moves the faults earlier, the first to Lead after the start, and
// cuts the run to end a little after the last window: the time before the
// first fault and after the last one is what a short reproduction drops.
func (s *search) shift(ctx context.Context, best *Candidate) error {
	c := best.clone()
	shifted := false
	if len(c.Schedule.Steps) > 0 {
		first := c.Schedule.Steps[0].At.D()
		for _, st := range c.Schedule.Steps {
			first = min(first, st.At.D())
		}
		if d := first - s.o.Lead; d > 0 {
			for i := range c.Schedule.Steps {
				c.Schedule.Steps[i].At -= nemesis.Duration(d)
			}
			shifted = true
		}
	}
	c.Time = min(c.Time, ceilSecond(max(c.Schedule.End()+s.o.Lead, s.o.MinTime)))
	if c.Time == best.Time && !shifted {
		return nil
	}
	_, err := s.keep(ctx, best, c)
	return err
}

// windows halves each step's window while the run still fails, and with
// it a stall its value names ("ms": a client pause stalls that long
// whatever its window).
func (s *search) windows(ctx context.Context, best *Candidate) error {
	for i := range best.Schedule.Steps {
		for best.Schedule.Steps[i].For.D()/2 >= s.o.MinFor {
			c := best.clone()
			c.Schedule.Steps[i].For = nemesis.Duration((c.Schedule.Steps[i].For.D() / 2).Round(time.Millisecond))
			c.Schedule.Steps[i].Value = halveMS(c.Schedule.Steps[i].Value, s.o.MinFor)
			ok, err := s.keep(ctx, best, c)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
		}
	}
	return nil
}

// clients halves the clients, then takes one away at a time (two at
// least: an overlap takes two).
func (s *search) clients(ctx context.Context, best *Candidate) error {
	return s.fewer(ctx, best, 2, func(c *Candidate) *int { return &c.Clients })
}

func (s *search) locks(ctx context.Context, best *Candidate) error {
	return s.fewer(ctx, best, 1, func(c *Candidate) *int { return &c.Locks })
}

func (s *search) fewer(ctx context.Context, best *Candidate, floor int, field func(*Candidate) *int) error {
	for *field(best) > floor {
		c := best.clone()
		v := field(&c)
		if half := *v / 2; half >= floor && half < *v-1 {
			*v = half
		} else {
			*v--
		}
		ok, err := s.keep(ctx, best, c)
		if err != nil {
			return err
		}
		if !ok {
			if *v < *field(best)-1 { // the half failed: one fewer
				c = best.clone()
				*field(&c) = *field(best) - 1
				if ok, err = s.keep(ctx, best, c); err != nil || ok {
					if err != nil {
						return err
					}
					continue
				}
			}
			return nil
		}
	}
	return nil
}

// time halves the run's time, not below the end of the last window nor
// MinTime.
func (s *search) time(ctx context.Context, best *Candidate) error {
	floor := max(s.o.MinTime, best.Schedule.End())
	for best.Time/2 >= floor {
		c := best.clone()
		c.Time = max((c.Time / 2).Round(time.Second), floor)
		ok, err := s.keep(ctx, best, c)
		if err != nil || !ok {
			return err
		}
	}
	return nil
}

// ceilSecond rounds d up to a whole second: a run's time a user reads.
func ceilSecond(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

// halveMS halves the "ms" field of a step's value (not below min), and
// leaves a value without one as it is.
func halveMS(v json.RawMessage, min time.Duration) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(v, &fields) != nil {
		return v
	}
	var ms int64
	if raw, ok := fields["ms"]; !ok || json.Unmarshal(raw, &ms) != nil || ms <= 0 {
		return v
	}
	ms = max(ms/2, min.Milliseconds())
	fields["ms"] = json.RawMessage(strconv.FormatInt(ms, 10))
	out, err := json.Marshal(fields)
	if err != nil {
		return v
	}
	return out
}
