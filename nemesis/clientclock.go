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

// ClientClock sets a contender's clock behind (or ahead: WithClientSkewAhead).
const ClientClock = history.KindClientClock

var clientClockKind = Kind{
	Name: ClientClock, Scope: ScopeClient, Color: "#edc948",
	Doc: "Sets one contender's clock behind (1 s to 30 s by default, run --skew-min and --skew-max; ahead with run --skew-ahead), stepped between two of its operations; a lock " +
		"with its own process gets the step too (workload.ClockSetter).",
	StartValue: history.ClientClockStart{Client: 3, Offset: "-5.658s"}, StopValue: history.ClientClockStop{Client: 3},
	Cause: &faultkind.Cause{Anomalies: []string{faultkind.Overlap, faultkind.NonLinearizable, faultkind.LostAdd, faultkind.StaleWrite},
		Explain: func(w history.FaultWindow, a faultkind.Anomaly) (string, bool) {
			v, ok := faultkind.Decode[history.ClientClockStart](w.Value, "client")
			if !ok || v.Offset == "" {
				return "", false
			}
			if strings.HasPrefix(v.Offset, "+") {
				return fmt.Sprintf("client %d's clock ran %s ahead (client-clock, --skew-ahead): a lock whose expiry is an instant "+
					"of the client's clock (ShedLock's lockUntil, Astyanax's lock column) found the holder's lock expired and took it "+
					"while the holder was inside", v.Client, strings.TrimPrefix(v.Offset, "+")), true
			}
			return fmt.Sprintf("client %d's clock was %s off (client-clock): a lock that orders requests by client time "+
				"(time-UUID refs, client write timestamps) can sort a later request first and grant it while the holder is inside; "+
				"one that writes its expiry as an instant of the client's clock (Astyanax's lock column) makes claims the others "+
				"count expired as soon as they are written", v.Client, strings.TrimPrefix(v.Offset, "+")), true
		}},
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

// clientClockWait is how long a client-clock fault waits at least for its
// client's rest (a blocking acquire lasts up to its timeout, 5 s).
const clientClockWait = 10 * time.Second

// Start sets one contender's clock behind: a client that does not hold a
// lock now, from its next rest between operations, so that its next request
// jumps the queue (or hides under its own older tombstone) while the holder
// is still inside.
func (c *clientClock) Start(ctx context.Context, e *Env, hold time.Duration) (Stop, error) {
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
	if v, ok := given[history.ClientClockStart](e); ok && v.Offset != "" {
		od, err := time.ParseDuration(v.Offset)
		if err != nil || v.Client < 0 || v.Client >= e.Clients.Clients() {
			return nil, fmt.Errorf("nemesis: schedule: client-clock of client %d by %q: no such client or offset", v.Client, v.Offset)
		}
		cl, d = v.Client, od
	}
	c.mark(cl, true)
	// The step lands between two of the client's operations: one inside a
	// recipe's writes mostly wedges it (a cell written before the step
	// shadows those after), which hides the flaw a step between them shows.
	// The start line is written when the clock moved, in the client's own
	// goroutine before its next operation.
	var mu sync.Mutex
	stepped, stopped := false, false
	var recErr error
	took := make(chan struct{})
	onStep := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		stepped = true
		recErr = e.Record(history.StartF(ClientClock), history.ClientClockStart{Client: cl, Offset: d.String()}, nil)
		close(took)
	}
	if err := e.Clients.SetClientClockAtRest(cl, d, onStep); err != nil {
		return nil, fmt.Errorf("nemesis: client clock: %w", err)
	}
	// The fault starts when the step took effect: wait for the client's
	// rest (a contender may be inside a blocking acquire for seconds). One
	// that does not come is a start that failed, dealt again later.
	wait := time.NewTimer(max(hold, clientClockWait))
	defer wait.Stop()
	select {
	case <-took:
	case <-wait.C:
	case <-ctx.Done():
	}
	mu.Lock()
	if !stepped {
		stopped = true
		mu.Unlock()
		return nil, errors.Join(fmt.Errorf("nemesis: client clock: client %d did not rest between operations within %v", cl, max(hold, clientClockWait)),
			e.Clients.SetClientClock(cl, 0))
	}
	mu.Unlock()
	return func(ctx context.Context) error {
		err := e.Clients.SetClientClock(cl, 0)
		if err == nil {
			c.mark(cl, false)
		}
		mu.Lock()
		defer mu.Unlock()
		return errors.Join(err, recErr, e.Record(history.StopF(ClientClock), history.ClientClockStop{Client: cl}, nil))
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
