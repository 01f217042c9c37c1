package lockcmd

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/workload"
)

// memHistory records what the workload appends.
type memHistory struct {
	mu  sync.Mutex
	ops []history.Op
}

func (h *memHistory) Append(op history.Op) (history.Op, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	op.Index = int64(len(h.ops))
	h.ops = append(h.ops, op)
	return op, nil
}

// memSet is a protected resource in memory (the workload's contract, not
// a correct one: these tests look at processes, not at exclusion).
type memSet struct {
	mu   sync.Mutex
	sets map[string][]int64
}

func (s *memSet) Read(ctx context.Context, lock string) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sets[lock]), nil
}

func (s *memSet) Add(ctx context.Context, lock string, elem, token int64, before func(context.Context) error) error {
	if before != nil {
		if err := before(ctx); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sets[lock] = append(s.sets[lock], elem)
	return nil
}

// Under the workload, a plug-in whose replies break now and then costs one
// info op each time: the client goes on under a new process number, on a
// new plug-in process, and every invocation is completed in the history.
func TestWorkloadReplacesBrokenPlugin(t *testing.T) {
	d, err := New(fakeCommand("ok"), testEnv, WithGrace(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	const clients = 2
	locks := make([]*Lock, clients)
	for i := range locks {
		if locks[i], err = d.Start(context.Background(), i); err != nil {
			t.Fatal(err)
		}
		defer locks[i].Close()
	}
	h := &memHistory{}
	w, err := workload.New(func(i int, _ workload.Clock) (workload.Lock, error) { return locks[i], nil },
		&memSet{sets: map[string][]int64{}}, h, workload.WithClients(clients), workload.WithLocks("flaky"),
		workload.WithHold(time.Millisecond), workload.WithThink(time.Millisecond), workload.WithStagger(0))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	open := map[int]history.Op{} // process -> its pending invocation
	ended := map[int]bool{}      // processes that had an info: they never invoke again
	infos := 0
	for _, op := range h.ops {
		if op.Type == history.Invoke {
			if p, ok := open[op.Process]; ok {
				t.Fatalf("process %d invoked %s with %s still open", op.Process, op.F, p.F)
			}
			if ended[op.Process] {
				t.Errorf("process %d invoked %s after its info: the client must move to a new process", op.Process, op.F)
			}
			open[op.Process] = op
			continue
		}
		delete(open, op.Process)
		if op.Type == history.Info {
			infos++
			ended[op.Process] = true
			if op.F != history.FAcquire {
				t.Errorf("info %s: %s", op.F, op.Error)
			}
		}
	}
	if len(open) > 0 {
		t.Errorf("invocations never completed: %v", open)
	}
	if infos == 0 {
		t.Fatal("no broken reply in the run")
	}
	for _, l := range locks {
		if l.gen < 2 {
			t.Errorf("client %d: %d plug-in processes, want the broken ones replaced", l.client, l.gen)
		}
	}
}

// A leader heartbeats through the plug-in's renew when its setup said
// "renew":true, and re-acquires under its owner when it did not: the
// history shows renew ops for the one and none for the other.
func TestLeaderRenewsThroughPlugin(t *testing.T) {
	for _, c := range []struct {
		mode   string
		renews bool
	}{{"renew", true}, {"ok", false}} {
		t.Run(c.mode, func(t *testing.T) {
			d, err := New(fakeCommand(c.mode), testEnv, WithGrace(200*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			l, err := d.Start(context.Background(), 0)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			h := &memHistory{}
			w, err := workload.New(func(int, workload.Clock) (workload.Lock, error) { return l, nil },
				&memSet{sets: map[string][]int64{}}, h, workload.WithClients(1), workload.WithLocks("a"),
				workload.WithShape(workload.ShapeLeader), workload.WithTerm(4*time.Second),
				workload.WithHold(50*time.Millisecond), workload.WithStagger(0))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := w.Run(ctx); err != nil {
				t.Fatal(err)
			}
			renews, acquires := 0, 0
			for _, op := range h.ops {
				if op.Type != history.OK {
					continue
				}
				switch op.F {
				case history.FRenew:
					renews++
				case history.FAcquire:
					acquires++
				}
			}
			if c.renews && (renews == 0 || acquires != 1) {
				t.Errorf("renews %d, acquires %d: want renews and one acquire", renews, acquires)
			}
			if !c.renews && (renews != 0 || acquires < 2) {
				t.Errorf("renews %d, acquires %d: want re-acquires and no renew", renews, acquires)
			}
		})
	}
}
