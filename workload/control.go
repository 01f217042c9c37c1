package workload

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Control is the one door through which client faults reach the clients
// (nemesis.Clients is what the nemesis asks of it): who holds a lock now,
// a pause of the next holder, a client's clock moved at once or at its next
// rest, clients held between operations. It keeps its own lock, apart from
// the workload's: a fault waiting here never holds up the bookkeeping of
// the clients' operations. A new client fault adds its method here and
// nowhere else in the workload.
type Control struct {
	clocks []*SkewClock
	log    *slog.Logger

	mu      sync.Mutex
	locks   []Lock       // client -> its lock once Run made it
	holding map[int]bool // clients holding a grant now
	pause   *pauseReq    // armed client pause, claimed by the next critical section
	kill    *killReq     // armed client kill, claimed by its target (kill.go)
	// atRest are clock steps waiting for their client's next rest (between
	// a cycle's end and the next acquire): client -> the step.
	atRest map[int]restStep
	// gates hold clients at their rest (HoldAtRest): client -> gate.
	gates map[int]*restGate
}

type pauseReq struct {
	extra time.Duration
	stall time.Duration // when positive, the stall's length (a replay's), not lease plus extra
	// began receives who stalled, once the stall has begun (the process
	// stopped, or the client's goroutine asleep): the start line's moment.
	began chan history.ClientPauseStart
	// resumed runs in the client's goroutine as it resumes, before it goes
	// on (the nemesis writes its stop line there: nothing of the client's
	// comes before it); done is closed after it.
	resumed func()
	done    chan struct{}
}

// restStep is a clock step waiting for its client's rest; stepped (may be
// nil) runs once the clock moved, before the client's next operation.
type restStep struct {
	d       time.Duration
	stepped func()
}

// restGate keeps one client at its rest until opened.
type restGate struct {
	arrived, open chan struct{}
}

func newControl(clocks []*SkewClock, log *slog.Logger) *Control {
	return &Control{clocks: clocks, log: log, locks: make([]Lock, len(clocks)), holding: map[int]bool{},
		atRest: map[int]restStep{}, gates: map[int]*restGate{}}
}

// Control is the workload's door for client faults.
func (w *Workload) Control() *Control { return w.ctl }

// Clients is the number of clients.
func (c *Control) Clients() int { return len(c.clocks) }

func (c *Control) client(i int) error {
	if i < 0 || i >= len(c.clocks) {
		return fmt.Errorf("workload: no client %d", i)
	}
	return nil
}

func (c *Control) setLock(i int, l Lock) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.locks[i] = l
}

func (c *Control) setHolding(i int, on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if on {
		c.holding[i] = true
	} else {
		delete(c.holding, i)
	}
}

// Holders are the clients that hold a grant now, in client order.
func (c *Control) Holders() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var hs []int
	for i := range c.clocks {
		if c.holding[i] {
			hs = append(hs, i)
		}
	}
	return hs
}

// SetClientClock moves client i's clock by d from the machine's time, and
// the clock of its lock's process when the lock is a ClockSetter. It
// cancels a step waiting for the client's rest.
func (c *Control) SetClientClock(i int, d time.Duration) error {
	if err := c.client(i); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.atRest, i)
	c.mu.Unlock()
	return c.setClock(i, d)
}

// SetClientClockAtRest moves client i's clock by d at its next rest: after
// the operation it is in now ends and before its next acquire. A clock that
// steps in the middle of a recipe's sequence of writes mostly wedges it (a
// cell written before the step shadows the ones after); a step between
// operations is what lets a client-timestamp recipe's flaw show (bakery: the
// client's new ticket sits under its own older tombstone). stepped (may be
// nil) runs in the client's goroutine once its clock moved, before its next
// operation: the fault's start line is written there, when it took effect.
// A SetClientClock before the rest cancels the step (stepped never runs).
func (c *Control) SetClientClockAtRest(i int, d time.Duration, stepped func()) error {
	if err := c.client(i); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.atRest[i] = restStep{d: d, stepped: stepped}
	return nil
}

// HoldAtRest stops each client of cs at its next rest (between two of its
// operations, when it holds nothing and is in no recipe's sequence of
// writes) and returns once all rest there, or when ctx ends (then with
// ctx's error, the clients let go). The clients stay until release is
// called: a fault that needs them between operations (the aimed
// partition) takes effect meanwhile.
func (c *Control) HoldAtRest(ctx context.Context, cs []int) (release func(), err error) {
	for _, i := range cs {
		if err := c.client(i); err != nil {
			return nil, err
		}
	}
	gates := make([]*restGate, 0, len(cs))
	c.mu.Lock()
	for _, i := range cs {
		if c.gates[i] == nil {
			c.gates[i] = &restGate{arrived: make(chan struct{}), open: make(chan struct{})}
		}
		gates = append(gates, c.gates[i])
	}
	c.mu.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			c.mu.Lock()
			for _, i := range cs {
				if g := c.gates[i]; g != nil {
					close(g.open)
					delete(c.gates, i)
				}
			}
			c.mu.Unlock()
		})
	}
	for _, g := range gates {
		select {
		case <-g.arrived:
		case <-ctx.Done():
			release()
			return nil, fmt.Errorf("workload: clients %v not at rest: %w", cs, ctx.Err())
		}
	}
	return release, nil
}

// rest applies client i's clock step waiting for its rest, if any, and
// waits at its gate while one holds it (or until ctx ends).
func (c *Control) rest(ctx context.Context, i int) {
	c.mu.Lock()
	st, ok := c.atRest[i]
	delete(c.atRest, i)
	g := c.gates[i]
	c.mu.Unlock()
	if ok {
		if err := c.setClock(i, st.d); err != nil {
			c.log.Warn("client clock not stepped", "client", i, "err", err)
		}
		if st.stepped != nil {
			st.stepped()
		}
	}
	if g == nil {
		return
	}
	select {
	case <-g.arrived:
	default:
		close(g.arrived)
	}
	select {
	case <-g.open:
	case <-ctx.Done():
	}
}

func (c *Control) setClock(i int, d time.Duration) error {
	c.clocks[i].SetOffset(d)
	c.mu.Lock()
	cs, ok := c.locks[i].(ClockSetter)
	c.mu.Unlock()
	if ok {
		if err := cs.SetClockOffset(d); err != nil {
			return fmt.Errorf("workload: clock of client %d: %w", i, err)
		}
	}
	return nil
}

// PauseHolder arms a pause for the next client that enters a critical
// section (necessarily a holder): it stalls between reading the protected
// set and writing it, for its grant's lease plus extra (extra alone when
// the grant does not expire), or for stall when it is positive (a replay
// stalls as long as the run it replays did). PauseHolder blocks until a client has begun
// the stall (its process stopped when the lock has one), or ctx is done
// (the pause is then disarmed). It returns who stalled, as the fault's
// start line records it, and a channel closed when the client resumed.
// resumed (may be nil) runs as the client resumes, before any operation of
// its own: the start and stop lines are the stall's own times, not the
// schedule's.
func (c *Control) PauseHolder(ctx context.Context, extra, stall time.Duration, resumed func()) (history.ClientPauseStart, <-chan struct{}, error) {
	req := &pauseReq{extra: extra, stall: stall, began: make(chan history.ClientPauseStart, 1), resumed: resumed, done: make(chan struct{})}
	c.mu.Lock()
	if c.pause != nil {
		c.mu.Unlock()
		return history.ClientPauseStart{}, nil, errors.New("workload: a client pause is already armed")
	}
	c.pause = req
	c.mu.Unlock()
	select {
	case p := <-req.began:
		return p, req.done, nil
	case <-ctx.Done():
		c.mu.Lock()
		if c.pause == req {
			c.pause = nil
			c.mu.Unlock()
			return history.ClientPauseStart{}, nil, ctx.Err()
		}
		c.mu.Unlock()
		// Claimed meanwhile: the stall begins within the claimer's read
		// (or the claim is handed back and the pause disarmed below).
		select {
		case p := <-req.began:
			return p, req.done, nil
		case <-req.done:
			return history.ClientPauseStart{}, nil, ctx.Err()
		}
	}
}

// claimPause takes the armed pause, if any, for client i's process proc
// holding g, and says how long it stalls. The claimer calls begin when the
// stall has begun and end when it resumed; a claimer whose critical section
// ended before the stall (its read failed) calls unclaim.
func (c *Control) claimPause(g Grant) (*pauseReq, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	req := c.pause
	if req == nil {
		return nil, 0
	}
	c.pause = nil
	if req.stall > 0 {
		return req, req.stall
	}
	return req, req.extra + g.Lease
}

// begin says the stall of client i's process proc on lock, for d, has begun.
func (r *pauseReq) begin(i, proc int, lock string, d time.Duration) {
	r.began <- history.ClientPauseStart{Client: i, Process: proc, Lock: lock, MS: d.Milliseconds()}
}

// end says the stalled client resumed.
func (r *pauseReq) end() {
	if r.resumed != nil {
		r.resumed()
	}
	close(r.done)
}

// unclaim hands back a pause whose claimer never stalled: armed again for
// the next holder, or, when the nemesis gave up meanwhile, dropped.
func (c *Control) unclaim(r *pauseReq) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pause == nil {
		c.pause = r
		return
	}
	close(r.done)
}
