package nemesis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

func (n *Nemesis) jitter() time.Duration {
	return n.interval/2 + time.Duration(n.env.Sched.Int64N(int64(n.interval)))
}

// Run starts and stops faults at random intervals until ctx is done; a fault
// in effect then is stopped (recorded) before Run returns. Run with no kinds
// waits for ctx. Heal afterwards to undo anything a failed stop left. With a
// schedule (WithSchedule) Run deals its steps instead of drawing.
func (n *Nemesis) Run(ctx context.Context) error {
	if n.env.rec == nil {
		return errors.New("nemesis: a recorder is required (New's or Attach's)")
	}
	if n.schedule != nil {
		return n.runSchedule(ctx)
	}
	if len(n.kinds) == 0 {
		<-ctx.Done()
		return nil
	}
	// live is ctx until the time is up (WithFirstRound): the sleeps and
	// windows dealt in the run's time end with it as they do without the
	// option; only the first round's late tries get ctx's longer bound.
	live := ctx
	if n.timeUp != nil {
		var cancel context.CancelFunc
		live, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-n.timeUp:
				cancel()
			case <-live.Done():
			}
		}()
	}
	var errs []error
	var deck []fault
	// dealt and tried serve WithFirstRound: the kinds dealt so far, and
	// those given their one try after the time was up.
	dealt, tried := map[string]bool{}, map[string]bool{}
	for {
		dctx := live
		late := n.isTimeUp()
		if late {
			deck = slices.DeleteFunc(deck, func(f fault) bool { return dealt[f.Name] || tried[f.Name] })
			if len(deck) == 0 {
				for _, f := range n.kinds {
					if !dealt[f.Name] && !tried[f.Name] {
						deck = append(deck, f)
					}
				}
			}
			if len(deck) == 0 {
				return errors.Join(errs...)
			}
			tried[deck[0].Name] = true
			dctx = ctx
		}
		if !sleep(dctx, n.jitter()) {
			if n.isTimeUp() && ctx.Err() == nil {
				continue // the first round's tries, if any are left
			}
			return errors.Join(errs...)
		}
		if !late && n.isTimeUp() {
			// The time ran out in the sleep, and live's cancel (another
			// goroutine) may not have landed yet on a loaded machine:
			// the first round's rule, not this deal, decides what comes.
			continue
		}
		// Kinds are dealt from a shuffled deck, so that every kind comes
		// once in each round of len(kinds) faults: a short run still sees
		// them all, in a seeded random order.
		if len(deck) == 0 {
			for _, j := range n.env.Sched.Perm(len(n.kinds)) {
				deck = append(deck, n.kinds[j])
			}
			// Kinds whose undo restarts nodes (a minute on a loaded
			// machine) come last in the round, so that a short run
			// still sees the quick ones.
			slices.SortStableFunc(deck, func(a, b fault) int { return cmp.Compare(restarts(a), restarts(b)) })
		}
		kind := deck[0]
		deck = deck[1:]
		started, err := n.deal(dctx, kind, n.jitter(), nil)
		if err != nil {
			errs = append(errs, err)
		}
		if started && !dealt[kind.Name] {
			dealt[kind.Name] = true
			if n.timeUp != nil {
				n.mu.Lock()
				n.undealt--
				n.mu.Unlock()
			}
		}
		if !started && dctx.Err() == nil {
			deck = append(deck, kind) // tried again after the rest of the round
		}
		if dctx.Err() != nil {
			if n.isTimeUp() && ctx.Err() == nil {
				continue
			}
			return errors.Join(errs...)
		}
	}
}

// runSchedule deals the schedule's steps in order, each at its offset from
// the start (at once when that has passed), for its length; then waits
// for ctx. A step waits for every window before it to end, unless it
// overlaps: then it starts at its time while they are still open (a cut
// of a coordinator during a bootstrap). Starts stay one at a time, in
// order; the windows' holds and stops run side by side.
//
// A step that follows another (Step.After) is due At after the moment
// that step's window reached its phase, not after the start. A schedule
// with such steps, or with a range movement among its steps
// (Schedule.DealtInFull), does not wait for ctx once every step is dealt:
// it returns when the last window has ended, so that the runner can end a
// run that outlasted its time as soon as the schedule is done (see
// runner.Test.Time). A step whose moment never comes (the window it
// follows did not start, or ended without streaming) is not dealt: a
// start-K-failed line says why, and Undealt counts it.
func (n *Nemesis) runSchedule(ctx context.Context) error {
	var (
		mu   sync.Mutex
		errs []error
		open sync.WaitGroup
		// A kind keeps one window at a time (its stop undoes the
		// whole of it: one iptables chain), even when the windows
		// before an overlapping step ran late.
		ofKind = map[string]*sync.WaitGroup{}
		// The moments each step's window reached, for the steps that
		// follow it.
		marks = make([]*moments, len(n.schedule.Steps))
	)
	for i := range marks {
		marks[i] = newMoments()
	}
	addErr := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	done := func() error {
		open.Wait() // every window's stop is recorded before Run returns
		mu.Lock()
		defer mu.Unlock()
		return errors.Join(errs...)
	}
	start := time.Now()
	for i := range n.schedule.Steps {
		st := &n.schedule.Steps[i]
		if ofKind[st.Kind] == nil {
			ofKind[st.Kind] = &sync.WaitGroup{}
		}
		if st.Overlap {
			ofKind[st.Kind].Wait()
		} else {
			open.Wait()
		}
		due := start.Add(st.At.D())
		if f := st.After; f != nil {
			at, ok := marks[f.Step-1].wait(ctx, f.Phase)
			if ctx.Err() != nil {
				return done()
			}
			if !ok {
				marks[i].giveUp()
				why := fmt.Sprintf("schedule step %d follows step %d's %s, which its window never reached", i+1, f.Step, f.Phase)
				n.env.Log.Warn("nemesis: step not dealt", "kind", st.Kind, "why", why)
				if err := n.env.Record(history.StartFailedF(st.Kind), why, nil); err != nil {
					addErr(err)
				}
				continue
			}
			due = at.Add(st.At.D())
		}
		if !sleep(ctx, time.Until(due)) {
			return done()
		}
		k := slices.IndexFunc(n.kinds, func(f fault) bool { return f.Name == st.Kind })
		if k < 0 {
			addErr(fmt.Errorf("nemesis: schedule step %d: kind %s not set up", i+1, st.Kind))
			return done()
		}
		kind := n.kinds[k]
		mark := marks[i]
		stop, err := n.begin(ctx, kind, st.For.D(), st, mark.reach)
		if err != nil {
			addErr(err)
		}
		if stop == nil {
			mark.giveUp()
		} else {
			mark.reach(Started)
			n.mu.Lock()
			n.undealt--
			n.mu.Unlock()
			own := ofKind[st.Kind]
			open.Add(1)
			own.Add(1)
			go func() {
				defer open.Done()
				defer own.Done()
				if err := n.end(ctx, kind, st.For.D(), stop); err != nil {
					addErr(err)
				}
				mark.reach(Ended)
				mark.giveUp()
			}()
		}
		if ctx.Err() != nil {
			return done()
		}
	}
	if !n.schedule.DealtInFull() {
		<-ctx.Done()
	}
	return done()
}

// Undealt is how many of the schedule's steps were not dealt (not
// started: the run ended first, their start failed, or the window they
// follow never reached its phase); for a drawn run WithFirstRound, how
// many of its kinds were not dealt yet; else 0.
func (n *Nemesis) Undealt() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.undealt
}

// moments are the phases one step's window reached and when: each phase's
// channel is closed when it is reached, or when it never will be (the
// window did not start, or ended without it).
type moments struct {
	mu sync.Mutex
	at map[Phase]time.Time
	ch map[Phase]chan struct{}
}

func newMoments() *moments {
	m := &moments{at: map[Phase]time.Time{}, ch: map[Phase]chan struct{}{}}
	for _, p := range Phases {
		m.ch[p] = make(chan struct{})
	}
	return m
}

// reach marks p reached now (the first time only).
func (m *moments) reach(p Phase) {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.ch[p]:
		return
	default:
	}
	m.at[p] = time.Now()
	close(m.ch[p])
}

// giveUp closes every phase not reached: it never will be.
func (m *moments) giveUp() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.ch {
		select {
		case <-c:
		default:
			close(c)
		}
	}
}

// wait returns when p was reached (ok) or will not be.
func (m *moments) wait(ctx context.Context, p Phase) (time.Time, bool) {
	select {
	case <-m.ch[p]:
	case <-ctx.Done():
		return time.Time{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.at[p]
	return at, ok
}

// deal starts one fault of kind (from step's parameters, or drawn when step
// is nil), keeps it for hold and stops it. started is false when it did
// not start (recorded as a failed start: the schedule goes on).
func (n *Nemesis) deal(ctx context.Context, kind fault, hold time.Duration, step *Step) (started bool, err error) {
	stop, err := n.begin(ctx, kind, hold, step, nil)
	if stop == nil {
		return false, err
	}
	return true, n.end(ctx, kind, hold, stop)
}

// begin starts one fault of kind; a nil stop is a fault that did not
// start (recorded as a failed start unless the run is over).
//
// reached, when set, is told the phases the window reports itself
// (Streamed): Start hands it to what runs on after it returns.
func (n *Nemesis) begin(ctx context.Context, kind fault, hold time.Duration, step *Step, reached func(Phase)) (Stop, error) {
	n.env.step, n.env.reached = step, reached
	stop, err := kind.Start(ctx, &n.env, hold)
	n.env.step, n.env.reached = nil, nil
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil
		}
		// A fault that cannot start is logged and recorded, and the
		// schedule goes on: a run is not lost to one failed docker call.
		n.env.Log.Warn("nemesis: fault did not start", "kind", kind.Name, "err", err)
		if rerr := n.env.Record(history.StartFailedF(kind.Name), err.Error(), nil); rerr != nil {
			return nil, rerr
		}
		return nil, err
	}
	n.setActive(kind.Name, true)
	return stop, nil
}

// end keeps a started fault for hold and stops it.
func (n *Nemesis) end(ctx context.Context, kind fault, hold time.Duration, stop Stop) error {
	sleep(ctx, hold)
	// The stop runs to completion even when the run is over, so that its
	// line is recorded.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopWait(kind))
	err := stop(sctx)
	cancel()
	n.setActive(kind.Name, false)
	if err != nil {
		n.env.Log.Warn("nemesis: fault did not stop", "kind", kind.Name, "err", err)
		return err
	}
	return nil
}

// Bounds of one fault's stop. A kind that restarts nodes waits for them to
// serve CQL again: a Cassandra 4.1 node killed on the 2-core machine at
// load 45 took over 2 minutes to come back (its start is slower than 5.0's),
// and a stop cut short leaves the node down for the rest of the run.
const (
	stopTimeout        = 2 * time.Minute
	restartStopTimeout = 6 * time.Minute
)

func stopWait(k fault) time.Duration {
	if k.StopWait > 0 {
		return k.StopWait
	}
	if k.Restarts {
		return restartStopTimeout
	}
	return stopTimeout
}

func restarts(k fault) int {
	if k.Restarts {
		return 1
	}
	return 0
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// isTimeUp says whether the run's requested time is over for a drawn run
// dealt WithFirstRound; never without it (Run then ends with its ctx).
func (n *Nemesis) isTimeUp() bool {
	if n.timeUp == nil {
		return false
	}
	select {
	case <-n.timeUp:
		return true
	default:
		return false
	}
}
