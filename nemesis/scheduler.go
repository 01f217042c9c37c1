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
	if n.schedule != nil {
		return n.runSchedule(ctx)
	}
	if len(n.kinds) == 0 {
		<-ctx.Done()
		return nil
	}
	var errs []error
	var deck []fault
	for {
		if !sleep(ctx, n.jitter()) {
			return errors.Join(errs...)
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
		started, err := n.deal(ctx, kind, n.jitter(), nil)
		if err != nil {
			errs = append(errs, err)
		}
		if !started && ctx.Err() == nil {
			deck = append(deck, kind) // tried again after the rest of the round
		}
		if ctx.Err() != nil {
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
func (n *Nemesis) runSchedule(ctx context.Context) error {
	var (
		mu   sync.Mutex
		errs []error
		open sync.WaitGroup
		// A kind keeps one window at a time (its stop undoes the
		// whole of it: one iptables chain), even when the windows
		// before an overlapping step ran late.
		ofKind = map[string]*sync.WaitGroup{}
	)
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
		if !sleep(ctx, time.Until(start.Add(st.At.D()))) {
			return done()
		}
		k := slices.IndexFunc(n.kinds, func(f fault) bool { return f.Name == st.Kind })
		if k < 0 {
			addErr(fmt.Errorf("nemesis: schedule step %d: kind %s not set up", i+1, st.Kind))
			return done()
		}
		kind := n.kinds[k]
		stop, err := n.begin(ctx, kind, st.For.D(), st)
		if err != nil {
			addErr(err)
		}
		if stop != nil {
			own := ofKind[st.Kind]
			open.Add(1)
			own.Add(1)
			go func() {
				defer open.Done()
				defer own.Done()
				if err := n.end(ctx, kind, st.For.D(), stop); err != nil {
					addErr(err)
				}
			}()
		}
		if ctx.Err() != nil {
			return done()
		}
	}
	<-ctx.Done()
	return done()
}

// deal starts one fault of kind (from step's parameters, or drawn when step
// is nil), keeps it for hold and stops it. started is false when it did
// not start (recorded as a failed start: the schedule goes on).
func (n *Nemesis) deal(ctx context.Context, kind fault, hold time.Duration, step *Step) (started bool, err error) {
	stop, err := n.begin(ctx, kind, hold, step)
	if stop == nil {
		return false, err
	}
	return true, n.end(ctx, kind, hold, stop)
}

// begin starts one fault of kind; a nil stop is a fault that did not
// start (recorded as a failed start unless the run is over).
func (n *Nemesis) begin(ctx context.Context, kind fault, hold time.Duration, step *Step) (Stop, error) {
	n.env.step = step
	stop, err := kind.Start(ctx, &n.env, hold)
	n.env.step = nil
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
