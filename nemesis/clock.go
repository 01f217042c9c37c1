package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/faultkind"
	"github.com/lockcheck/lockcheck/history"
)

// Clock moves node clocks (libfaketime): a bump, or a strobe that flips
// between the offset and real time.
const Clock = history.KindClock

var clockKind = Kind{
	Name: Clock, Scope: ScopeNode, Color: "#59a14f",
	Doc: "Moves the clocks of a random set of nodes, each by its own offset (10 ms to 3 min, either way): a bump that holds, " +
		"or a strobe that flips between the offset and real time.",
	Needs:      []Capability{CapClock},
	StartValue: history.ClockStart{Kind: "strobe", Offsets: map[string]string{"n1": "-1.5s", "n3": "27ms"}, Period: "120ms"},
	StopValue:  history.ClockStop{Kind: "strobe"},
	Cause: &faultkind.Cause{Anomalies: []string{faultkind.Overlap, faultkind.StaleWrite, faultkind.LostAdd, faultkind.NonLinearizable},
		Explain: func(w history.FaultWindow, a faultkind.Anomaly) (string, bool) {
			v, ok := faultkind.Decode[history.ClockStart](w.Value)
			if !ok || len(v.Offsets) == 0 {
				return "", false
			}
			var parts []string
			for n, o := range v.Offsets {
				parts = append(parts, n+" "+o)
			}
			slices.Sort(parts)
			return "node clocks were moved (" + strings.Join(parts, ", ") + "): a coordinator whose clock runs ahead " +
				"expires a TTL lease on the server before the holder's deadline, and one behind stamps writes in the past", true
		}},
	New: func() Injector { return &clock{} },
}

// clock keeps the strobe it runs, which its stop and its reset end.
type clock struct {
	mu         sync.Mutex
	strobeStop chan struct{}
	strobeDone chan struct{}
}

func (c *clock) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	strobe := e.Sched.IntN(3) == 0
	// A random non-empty subset of nodes, each with its own offset.
	perm := e.Sched.Perm(len(e.Targets))
	k := 1 + e.Sched.IntN(len(e.Targets))
	idx := perm[:k]
	slices.Sort(idx)
	offsets := map[string]string{}
	offs := make([]time.Duration, k)
	for i := range idx {
		d := logUniform(e.Sched, 10*time.Millisecond, 3*time.Minute)
		if e.Sched.IntN(2) == 0 {
			d = -d
		}
		offs[i] = d.Round(time.Millisecond)
		offsets[e.Targets[idx[i]].Name] = offs[i].String()
	}
	period := logUniform(e.Sched, 10*time.Millisecond, 500*time.Millisecond).Round(time.Millisecond)
	if v, ok := given[history.ClockStart](e); ok && len(v.Offsets) > 0 {
		var err error
		if idx, offs, err = givenOffsets(e, v.Offsets); err != nil {
			return nil, err
		}
		offsets = v.Offsets
		strobe = v.Kind == "strobe"
		if p, err := time.ParseDuration(v.Period); err == nil && p > 0 {
			period = p
		}
	}
	names := e.names(idx)
	set := func(ctx context.Context, zero bool) error {
		var errs []error
		for i, j := range idx {
			d := offs[i]
			if zero {
				d = 0
			}
			if err := e.Targets[j].Node.SetClockOffset(ctx, d); err != nil {
				errs = append(errs, fmt.Errorf("nemesis: clock of %s: %w", e.Targets[j].Name, err))
			}
		}
		return errors.Join(errs...)
	}
	undo := func(ctx context.Context) error {
		c.stopStrobe()
		return set(ctx, true)
	}
	if err := set(ctx, false); err != nil {
		return nil, errors.Join(err, undo(context.WithoutCancel(ctx)))
	}
	value := history.ClockStart{Kind: "bump", Offsets: offsets}
	if strobe {
		value = history.ClockStart{Kind: "strobe", Offsets: offsets, Period: period.String()}
		c.startStrobe(context.WithoutCancel(ctx), e, period, set)
	}
	if err := e.Record(history.StartF(Clock), value, names); err != nil {
		return nil, errors.Join(err, undo(context.WithoutCancel(ctx)))
	}
	return func(ctx context.Context) error {
		err := undo(ctx)
		return errors.Join(err, e.Record(history.StopF(Clock), history.ClockStop{Kind: value.Kind}, names))
	}, nil
}

func (c *clock) startStrobe(ctx context.Context, e *Env, period time.Duration, set func(context.Context, bool) error) {
	stop, done := make(chan struct{}), make(chan struct{})
	c.mu.Lock()
	c.strobeStop, c.strobeDone = stop, done
	c.mu.Unlock()
	go func() {
		defer close(done)
		zero := true
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if err := set(ctx, zero); err != nil {
					e.Log.Warn("nemesis: strobe", "err", err)
				}
				zero = !zero
			}
		}
	}()
}

func (c *clock) stopStrobe() {
	c.mu.Lock()
	stop, done := c.strobeStop, c.strobeDone
	c.strobeStop, c.strobeDone = nil, nil
	c.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// Reset ends this nemesis's strobe and sets the node's clock offset to 0 if
// it is not.
func (c *clock) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	c.stopStrobe()
	d, err := t.Node.ClockOffset(ctx)
	if err != nil {
		return false, err
	}
	if d == 0 {
		return false, nil
	}
	return true, t.Node.SetClockOffset(ctx, 0)
}

// givenOffsets are a schedule's clock offsets (node -> Go duration) as
// target indexes and durations, in target order.
func givenOffsets(e *Env, offsets map[string]string) ([]int, []time.Duration, error) {
	var idx []int
	var offs []time.Duration
	for i, t := range e.Targets {
		o, ok := offsets[t.Name]
		if !ok {
			continue
		}
		d, err := time.ParseDuration(o)
		if err != nil {
			return nil, nil, fmt.Errorf("nemesis: schedule: clock offset of %s: %w", t.Name, err)
		}
		idx = append(idx, i)
		offs = append(offs, d)
	}
	if len(idx) != len(offsets) {
		return nil, nil, fmt.Errorf("nemesis: the schedule's clock offsets name nodes this cluster does not have: %v", offsets)
	}
	return idx, offs, nil
}
