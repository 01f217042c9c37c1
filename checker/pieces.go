package checker

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/lockcheck/lockcheck/history"
)

// linQueue turns one lock's lock-object calls, as they stream in, into the
// model's operations and cuts them into pieces at isolated operations (see
// cut), handing each piece to porcupine as soon as it closes.
//
// Calls wait in invocation order until they complete: only then is it known
// whether they are operations of the model (ok, or an info release) or not
// (failed, or an info acquire or renew). An info release's window is closed
// as in the batch model: at its process's lease, or earlier at the return
// of an ok acquire by another process invoked after it (any such acquire
// proves the releasing process, retired by its info, can never own the lock
// again).
type linQueue struct {
	l      *lockSt
	q      []*call // invocation order; q[head:] still waiting
	head   int
	piece  []*lockOp
	init   lockState
	from   *lockOp
	index  int
	maxRet int64 // of the settled operations taken so far
	info   []*lockOp
	lease  map[int]int64 // process -> expiry of its latest ok grant
	leaseN int           // len(lease) after its last pruning
	nops   int
	vis    []*lockOp // the first operations, when this lock may be visualized
	visOn  bool
	offer  bool
}

func (lq *linQueue) setup(l *lockSt) {
	lq.l, lq.maxRet, lq.init, lq.lease = l, -1, free, map[int]int64{}
}

func (lq *linQueue) invoke(c *call) {
	lq.q = append(lq.q, c)
	lq.advance(c.inv, false)
}

func (lq *linQueue) complete(c *call) { lq.advance(c.ret, false) }

func (lq *linQueue) finish() {
	lq.advance(Never, true)
	if len(lq.piece) > 0 {
		lq.emit()
	}
}

// modelOp is c as an operation of the model, or nil when the model leaves it
// out (see the model's comment). A call without completion is an info call.
func modelOp(c *call) *lockOp {
	var kind byte
	switch c.f {
	case history.FAcquire:
		kind = 'a'
	case history.FRenew:
		kind = 'n'
	case history.FRelease:
		kind = 'r'
	default:
		return nil
	}
	switch {
	case c.done && c.typ == history.OK:
		return &lockOp{kind: kind, proc: c.proc, inv: c.inv, ret: c.ret, exp: expiry(c.inv, c.leaseMS), src: newOpSrc(c)}
	case kind == 'r' && (!c.done || c.typ == history.Info):
		return &lockOp{kind: kind, proc: c.proc, inv: c.inv, ret: Never, exp: expiry(c.inv, c.leaseMS), info: true, src: newOpSrc(c)}
	}
	return nil
}

func isModel(c *call) bool {
	return (c.done && c.typ == history.OK) || (c.f == history.FRelease && (!c.done || c.typ == history.Info))
}

// advance takes the calls at the head of the queue that are settled. now is
// the time of the line being read: every later invocation is at or after it.
func (lq *linQueue) advance(now int64, final bool) {
	defer lq.pruneLeases(now)
	segMin := lq.l.e.cfg.segmentMin
	for lq.head < len(lq.q) {
		c := lq.q[lq.head]
		if !c.done && !final {
			return
		}
		op := modelOp(c)
		if op == nil {
			lq.pop()
			continue
		}
		lq.settle(op.inv)
		cut := segMin > 0 && !op.info && lq.maxRet < op.inv && len(lq.info) == 0 && len(lq.piece)+1 >= segMin
		if cut {
			switch lq.nextInvokedAfter(op.ret, now, final) {
			case waitMore:
				return
			case no:
				cut = false
			}
		}
		lq.pop()
		lq.take(op)
		if cut {
			lq.emit()
			lq.from = op
			if op.kind == 'r' {
				lq.init = free
			} else {
				lq.init = lockState{owner: op.proc, expiry: op.exp}
			}
		}
	}
}

// pruneLeases drops the leases that ran out before any release still to be
// taken was invoked: for such a release an expired lease is the same as none
// (its window ends at its invocation either way). Without it the map would
// hold every process that ever took the lock.
func (lq *linQueue) pruneLeases(now int64) {
	if len(lq.lease) < 64 || len(lq.lease) < 2*lq.leaseN {
		return
	}
	t := now
	if lq.head < len(lq.q) {
		t = min(t, lq.q[lq.head].inv)
	}
	for p, exp := range lq.lease {
		if exp <= t {
			delete(lq.lease, p)
		}
	}
	lq.leaseN = len(lq.lease)
}

func (lq *linQueue) pop() {
	if c := lq.q[lq.head]; c.done && c.f != history.FRelease && !isModel(c) {
		// A failed or unknown acquire or renew: nothing else keeps it.
		lq.l.e.recycle(c)
	}
	lq.q[lq.head] = nil
	lq.head++
	if lq.head > 32 && lq.head*2 > len(lq.q) {
		n := copy(lq.q, lq.q[lq.head:])
		clear(lq.q[n:])
		lq.q, lq.head = lq.q[:n], 0
	}
}

// settle folds the info releases whose windows closed before t into maxRet.
func (lq *linQueue) settle(t int64) {
	kept := lq.info[:0]
	for _, r := range lq.info {
		if r.ret < t {
			lq.maxRet = max(lq.maxRet, r.ret)
		} else {
			kept = append(kept, r)
		}
	}
	clear(lq.info[len(kept):])
	lq.info = kept
}

type answer int

const (
	yes answer = iota
	no
	waitMore
)

// nextInvokedAfter: is the next operation of the model after the head
// invoked after t?
func (lq *linQueue) nextInvokedAfter(t, now int64, final bool) answer {
	for _, c := range lq.q[lq.head+1:] {
		if c.inv > t {
			return yes
		}
		if !c.done && !final {
			return waitMore
		}
		if isModel(c) {
			return no
		}
	}
	if final || now > t {
		return yes
	}
	return waitMore
}

func (lq *linQueue) take(op *lockOp) {
	if op.kind == 'a' && !op.info {
		for _, r := range lq.info {
			if r.proc != op.proc && op.inv < r.ret {
				r.ret, r.clamp = min(r.ret, op.ret), true
			}
		}
	}
	if op.info {
		end, ok := lq.lease[op.proc]
		if !ok {
			end = op.inv // it never owned the lock: a no-op
		}
		end = max(end, op.inv)
		if end != op.ret {
			op.ret, op.clamp = end, true
		}
		delete(lq.lease, op.proc) // retired by its info
		lq.info = append(lq.info, op)
	} else {
		lq.maxRet = max(lq.maxRet, op.ret)
		if op.kind != 'r' {
			lq.lease[op.proc] = op.exp
		}
	}
	lq.piece = append(lq.piece, op)
	lq.nops++
	if !lq.offer {
		lq.offer = true
		lq.visOn = lq.l.e.offerVis(lq)
	}
	if lq.visOn && len(lq.vis) <= visOps {
		lq.vis = append(lq.vis, op)
	}
}

func (lq *linQueue) emit() {
	p := piece{lock: lq.l.name, init: lq.init, from: lq.from, ops: lq.piece, index: lq.index}
	lq.index++
	lq.piece = nil
	lq.l.e.lin.submit(p)
}

// visOps is the most operations a visualization shows.
const visOps = 2000

// linRunner checks the locks' pieces with porcupine while the history is
// still being read.
type linRunner struct {
	*pool[piece]
	cfg   config
	mu    sync.Mutex // the shards submit
	locks map[string]bool
}

func newLinRunner(ctx context.Context, cfg config) *linRunner {
	return &linRunner{pool: newPool(ctx, cfg.workers, checkPiece), cfg: cfg, locks: map[string]bool{}}
}

func (r *linRunner) submit(p piece) {
	r.mu.Lock()
	r.locks[p.lock] = true
	r.mu.Unlock()
	r.pool.submit(p, len(p.ops))
}

// offerVis keeps the visualize locks of the shard first by name as
// candidates (the result takes the first of all the shards').
func (e *engine) offerVis(lq *linQueue) bool {
	n := e.cfg.visualize
	if n <= 0 {
		return false
	}
	i := sort.Search(len(e.visQ), func(i int) bool { return e.visQ[i].l.name > lq.l.name })
	if i >= n {
		return false
	}
	e.visQ = append(e.visQ, nil)
	copy(e.visQ[i+1:], e.visQ[i:])
	e.visQ[i] = lq
	if len(e.visQ) > n {
		out := e.visQ[n]
		out.visOn, out.vis = false, nil
		e.visQ = e.visQ[:n]
	}
	return true
}

// finish waits for the pieces and judges them; visQ are the candidates for
// a visualization, by name.
func (r *linRunner) finish(histEnd int64, visQ []*linQueue) (checkOutput, []LockLinearization) {
	r.wait(func(p piece) (string, int) { return p.lock, p.index })
	ctx := r.ctx
	out := checkOutput{result: CheckResult{Name: CheckLinear, Verdict: Valid}}
	perKind := map[string]int{}
	illegalLocks := map[string]bool{}
	var vis []LockLinearization
	for _, p := range r.illegal {
		illegalLocks[p.lock] = true
		a, lin := explainIllegal(ctx, p, histEnd)
		out.add(a, r.cfg.maxReports, perKind)
		if len(vis) < r.cfg.visualize && lin != nil {
			vis = append(vis, *lin)
		}
	}
	// Locks without a violation get a visualization of their first
	// operations, their whole history when it is small.
	for _, lq := range visQ {
		if len(vis) >= r.cfg.visualize || ctx.Err() != nil {
			break
		}
		if illegalLocks[lq.l.name] || len(lq.vis) == 0 {
			continue
		}
		ops := lq.vis[:min(len(lq.vis), visOps)]
		whole := lq.nops <= visOps
		if lin := visualize(ctx, piece{lock: lq.l.name, init: free, ops: ops}); lin != nil {
			lin.Whole = whole
			vis = append(vis, *lin)
		}
	}
	nops := r.ops
	switch {
	case len(r.illegal) > 0:
		out.result.Verdict = Invalid
		out.result.Detail = fmt.Sprintf("%d of %d pieces not linearizable (%d lock ops on %d locks)", len(r.illegal), r.pieces, nops, len(r.locks))
	case r.unknown > 0:
		out.result.Verdict = Unknown
		out.result.Detail = fmt.Sprintf("%d of %d pieces not decided in time (%d lock ops on %d locks)", r.unknown, r.pieces, nops, len(r.locks))
	default:
		out.result.Detail = fmt.Sprintf("%d lock ops on %d locks linearizable (%d pieces)", nops, len(r.locks), r.pieces)
	}
	return out, vis
}
