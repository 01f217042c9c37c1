package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// ClientClock sets a contender's clock behind (or ahead: WithClientSkewAhead).
const ClientClock = history.KindClientClock

var clientClockKind = Kind{
	Name: ClientClock, Scope: ScopeClient, Color: "#edc948",
	Doc: "Sets one contender's clock behind (1 s to 30 s by default; ahead with run --skew-ahead), stepped between two of its operations; a lock " +
		"with its own process gets the step too (workload.ClockSetter).",
	StartValue: history.ClientClockStart{Client: 3, Offset: "-5.658s"}, StopValue: history.ClientClockStop{Client: 3},
	New: func() Injector { return &clientClock{} },
}

// clientClock keeps the clients it skewed, which its reset sets back.
type clientClock struct {
	mu     sync.Mutex
	skewed map[int]bool
}

func (c *clientClock) mark(i int, on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.skewed == nil {
		c.skewed = map[int]bool{}
	}
	if on {
		c.skewed[i] = true
	} else {
		delete(c.skewed, i)
	}
}

// Start sets one contender's clock behind: a client that does not hold a
// lock now, from its next rest between operations, so that its next request
// jumps the queue (or hides under its own older tombstone) while the holder
// is still inside.
func (c *clientClock) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	d := -logUniform(e.Sched, e.SkewMin, e.SkewMax).Round(time.Millisecond)
	if e.SkewAhead {
		d = -d
	}
	holders := e.Clients.Holders()
	var cands []int
	for i := range e.Clients.Clients() {
		if !slices.Contains(holders, i) {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		for i := range e.Clients.Clients() {
			cands = append(cands, i)
		}
	}
	cl := cands[e.Pick.IntN(len(cands))]
	c.mark(cl, true)
	// The step lands between two of the client's operations: one inside a
	// recipe's writes mostly wedges it (a cell written before the step
	// shadows those after), which hides the flaw a step between them shows.
	if err := e.Clients.SetClientClockAtRest(cl, d); err != nil {
		return nil, fmt.Errorf("nemesis: client clock: %w", err)
	}
	if err := e.Record(history.StartF(ClientClock), history.ClientClockStart{Client: cl, Offset: d.String()}, nil); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		err := e.Clients.SetClientClock(cl, 0)
		if err == nil {
			c.mark(cl, false)
		}
		return errors.Join(err, e.Record(history.StopF(ClientClock), history.ClientClockStop{Client: cl}, nil))
	}, nil
}

// Reset sets back every client this nemesis skewed (a client's clock does
// not outlive its process).
func (c *clientClock) Reset(ctx context.Context, e *Env, _ Target) (bool, error) {
	c.mu.Lock()
	var skewed []int
	for i := range c.skewed {
		skewed = append(skewed, i)
	}
	c.mu.Unlock()
	var errs []error
	for _, i := range skewed {
		if err := e.Clients.SetClientClock(i, 0); err != nil {
			errs = append(errs, err)
			continue
		}
		c.mark(i, false)
	}
	return len(skewed) > 0, errors.Join(errs...)
}
