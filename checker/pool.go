package checker

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// pool checks pieces of a history with porcupine on a few workers while the
// history is still being read: the pieces of the locks and those of the
// register's keys.
type pool[P any] struct {
	ctx     context.Context
	check   func(context.Context, P) porcupine.CheckResult
	work    chan P
	wg      sync.WaitGroup
	mu      sync.Mutex // the submitters count, the workers report
	pieces  int
	ops     int
	unknown int
	illegal []P
}

func newPool[P any](ctx context.Context, workers int, check func(context.Context, P) porcupine.CheckResult) *pool[P] {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := &pool[P]{ctx: ctx, check: check, work: make(chan P, 2*workers)}
	for range workers {
		p.wg.Go(func() {
			for piece := range p.work {
				res := check(ctx, piece)
				p.mu.Lock()
				switch res {
				case porcupine.Unknown:
					p.unknown++
				case porcupine.Illegal:
					p.illegal = append(p.illegal, piece)
				}
				p.mu.Unlock()
			}
		})
	}
	return p
}

// submit hands a piece of ops operations to the workers; a piece that
// cannot be checked any more (the context ended) counts as undecided.
func (p *pool[P]) submit(piece P, ops int) {
	p.mu.Lock()
	p.pieces++
	p.ops += ops
	p.mu.Unlock()
	if p.ctx.Err() == nil {
		select {
		case p.work <- piece:
			return
		case <-p.ctx.Done():
		}
	}
	p.mu.Lock()
	p.unknown++
	p.mu.Unlock()
}

// wait lets the workers finish, then returns the illegal pieces in the
// order of their subject (lock or key) and number, so that a result never
// depends on which worker ended first.
func (p *pool[P]) wait(order func(P) (string, int)) []P {
	close(p.work)
	p.wg.Wait()
	slices.SortFunc(p.illegal, func(a, b P) int {
		an, ai := order(a)
		bn, bi := order(b)
		return cmp.Or(cmp.Compare(an, bn), cmp.Compare(ai, bi))
	})
	return p.illegal
}

// porcupineTimeout is how long porcupine may search before the context's
// deadline; ok is false when it has passed (the piece is undecided).
func porcupineTimeout(ctx context.Context) (timeout time.Duration, ok bool) {
	if ctx.Err() != nil {
		return 0, false
	}
	if dl, has := ctx.Deadline(); has {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return 0, false
		}
	}
	return timeout, true
}

// operationsOf gives a piece's operations to porcupine, its processes
// numbered densely.
func operationsOf[O interface{ span() (int, int64, int64) }](ops []O) []porcupine.Operation {
	out := make([]porcupine.Operation, len(ops))
	clients := denseClients{}
	for i, op := range ops {
		proc, inv, ret := op.span()
		out[i] = porcupine.Operation{ClientId: clients.of(proc), Input: op, Call: inv, Return: ret}
	}
	return out
}

// denseClients numbers a piece's processes 0, 1, 2... in order of
// appearance, so that a visualization has a row per process of the piece
// only (the operations' descriptions name the process).
type denseClients map[int]int

func (d denseClients) of(proc int) int {
	c, ok := d[proc]
	if !ok {
		c = len(d)
		d[proc] = c
	}
	return c
}
