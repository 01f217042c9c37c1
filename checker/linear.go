package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockcheck/lockcheck/history"
)

// The lock object's model: an owner-aware mutex with leases.
//
//   - acquire ok by P: legal when the lock is free, i.e. it has no owner, or
//     P owns it, or the owner's lease has expired by the acquire's return;
//     P then owns it until inv+lease_ms.
//   - renew ok by P: legal when P is still the owner; sets the lease again.
//   - release ok by P: legal when P is still the owner; frees the lock.
//
// A release or renew that returns ok after the lease ran out is legal as
// long as nobody else acquired since: Cassandra's TTL starts when the write
// is applied, after the invocation the history counts the lease from, so a
// late ok is not proof of a bug (mutual exclusion judges the holds).
//
// Failed ops did not happen and are left out. An info (or never completed)
// acquire or renew is left out too: had it taken effect, it would only make
// its retired process the owner, which never makes another process's op
// legal, so "never took effect" explains at least as much. An info release
// is kept: it may free the lock at any time after its invocation (when its
// process still owns it). It matters only until its process's lease ends or
// another process acquires, so that is where its window is closed.
//
// Leases make time part of the state: an op takes effect at some instant of
// [inv, ret], and the instants of a linearization never decrease. now is
// the earliest instant at which the ops linearized so far can all have
// taken effect (each as early as it can, which leaves later ops the most
// room), so an acquire that has to wait for a lease to expire also delays
// every op ordered after it.
type lockState struct {
	owner  int   // process; -1 when none
	expiry int64 // when the owner's lease ends; Never without a lease
	now    int64 // the last op's instant of effect
}

type lockOp struct {
	kind  byte // 'a'cquire, 'r'elease, 'n' renew
	proc  int
	inv   int64
	ret   int64
	exp   int64 // the grant's expiry for acquire and renew
	info  bool  // an info release
	clamp bool  // an info release whose window was closed early
	src   opSrc // in the op, not beside it: one allocation an op
}

// opSrc is what an anomaly shows of a lock op's lines: kept instead of its
// call, so that pieces waiting for porcupine stay small.
type opSrc struct {
	lock           string
	invIdx, retIdx int64 // retIdx -1: no completion
	retTime        int64
	typ            history.Type
	leaseMS        int64
	value          []byte // the completion's (a fencing token)
	err            string
}

func newOpSrc(c *call) opSrc {
	s := opSrc{lock: c.lock, invIdx: c.invLine.index, retIdx: -1, typ: c.typ, leaseMS: c.leaseMS}
	if c.done {
		s.retIdx, s.retTime, s.value, s.err = c.retLine.index, c.ret, c.retLine.value, c.retLine.err
	}
	return s
}

var kindF = map[byte]string{'a': history.FAcquire, 'r': history.FRelease, 'n': history.FRenew}

// lines rebuilds the op's invoke and completion lines.
func (op *lockOp) lines() []history.Op {
	s := &op.src
	f := kindF[op.kind]
	out := []history.Op{{Index: s.invIdx, Time: op.inv, Process: op.proc, Type: history.Invoke, F: f, Lock: s.lock}}
	if s.retIdx >= 0 {
		out = append(out, history.Op{Index: s.retIdx, Time: s.retTime, Process: op.proc, Type: s.typ, F: f, Lock: s.lock,
			Value: s.value, LeaseMS: s.leaseMS, Error: s.err})
	}
	return out
}

var free = lockState{owner: -1}

func lockStep(state, input, _ any) (bool, any) {
	return stepLock(state.(lockState), input.(*lockOp))
}

func stepLock(s lockState, in *lockOp) (bool, lockState) {
	at := max(s.now, in.inv)
	switch in.kind {
	case 'a':
		if s.owner != -1 && s.owner != in.proc {
			at = max(at, s.expiry) // wait for the owner's lease to end
		}
		if at <= in.ret {
			return true, lockState{owner: in.proc, expiry: in.exp, now: at}
		}
		return false, s
	case 'n':
		if s.owner == in.proc && at <= in.ret {
			return true, lockState{owner: in.proc, expiry: in.exp, now: at}
		}
		return false, s
	case 'r':
		if at > in.ret {
			return false, s
		}
		if s.owner == in.proc {
			return true, lockState{owner: -1, now: at}
		}
		// An info release of a lock its process does not own has no effect.
		s.now = at
		return in.info, s
	}
	return false, s
}

func describeLockOp(input, _ any) string {
	in := input.(*lockOp)
	name := map[byte]string{'a': "acquire", 'r': "release", 'n': "renew"}[in.kind]
	s := fmt.Sprintf("p%d %s", in.proc, name)
	if in.kind != 'r' && in.exp != Never {
		s += " until " + fmtTime(in.exp)
	}
	if in.info {
		s += " (info)"
	}
	return s
}

func describeLockState(state any) string {
	s := state.(lockState)
	if s.owner < 0 {
		return "free"
	}
	if s.expiry == Never {
		return fmt.Sprintf("owned by p%d", s.owner)
	}
	return fmt.Sprintf("owned by p%d until %s", s.owner, fmtTime(s.expiry))
}

// lockModel is the model of one piece of a lock's history, starting in init.
func lockModel(init lockState) porcupine.Model {
	return porcupine.Model{
		Init:              func() any { return init },
		Step:              lockStep,
		DescribeOperation: describeLockOp,
		DescribeState:     describeLockState,
	}
}

// LockLinearization is porcupine's data for one lock (or the piece of it
// that is not linearizable), kept for the report's visualization.
type LockLinearization struct {
	Lock   string
	Result porcupine.CheckResult
	Model  porcupine.Model
	Info   porcupine.LinearizationInfo
	Ops    int // operations in the visualized piece
	Whole  bool
}

// Visualize writes porcupine's HTML visualization.
func (l LockLinearization) Visualize(path string) error {
	return porcupine.VisualizePath(l.Model, l.Info, path)
}

// piece is a run of one lock's operations checked on its own.
type piece struct {
	lock  string
	init  lockState
	from  *lockOp // the isolated op that left the lock in init; nil at the start
	ops   []*lockOp
	index int // piece number within its lock
}

// cut splits one lock's operations at isolated ok operations: ones that no
// other operation overlaps in time. Every earlier operation returned before
// such an op and every later one starts after it, so it is linearized
// between them and the state after it is known whatever came before:
// owned by its process until its expiry (acquire, renew) or free (release).
// Its instant of effect is at most its return, before every later
// invocation, so the piece after it may start with now = 0.
// Pieces are therefore independent. minOps keeps pieces from being tiny;
// minOps <= 0 gives the lock's history whole.
func cut(lock string, ops []*lockOp, minOps int) []piece {
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].inv < ops[j].inv })
	if minOps <= 0 {
		return []piece{{lock: lock, init: free, ops: ops}}
	}
	var out []piece
	init, start := free, 0
	var from *lockOp
	var maxRet int64 = -1
	for i, op := range ops {
		isolated := !op.info && maxRet < op.inv && (i+1 == len(ops) || ops[i+1].inv > op.ret)
		maxRet = max(maxRet, op.ret)
		if !isolated || i+1-start < minOps {
			continue
		}
		out = append(out, piece{lock: lock, init: init, from: from, ops: ops[start : i+1], index: len(out)})
		from = op
		switch op.kind {
		case 'r':
			init = free
		default:
			init = lockState{owner: op.proc, expiry: op.exp}
		}
		start = i + 1
	}
	if start < len(ops) {
		out = append(out, piece{lock: lock, init: init, from: from, ops: ops[start:], index: len(out)})
	}
	return out
}

func (p piece) operations() []porcupine.Operation { return operationsOf(p.ops) }

func (op *lockOp) span() (proc int, inv, ret int64) { return op.proc, op.inv, op.ret }

func checkPiece(ctx context.Context, p piece) porcupine.CheckResult {
	timeout, ok := porcupineTimeout(ctx)
	if !ok {
		return porcupine.Unknown
	}
	if res, ok := p.checkInOrder(); ok {
		return res
	}
	if p.linearizeGreedily() {
		return porcupine.Ok
	}
	return porcupine.CheckOperationsTimeout(lockModel(p.init), p.operations(), timeout)
}

// linearizeGreedily looks for one linearization without backtracking: it
// repeatedly takes, of the operations that may come next in real time, the
// legal one that returned first (a holder's release before the acquire that
// waited for it). Finding one proves the piece linearizable, as porcupine
// would; not finding one proves nothing (a choice may have been wrong), and
// porcupine searches. A contended lock's valid pieces are mostly found this
// way, without the search's allocations.
func (p piece) linearizeGreedily() bool {
	ops := p.ops
	if !slices.IsSortedFunc(ops, func(a, b *lockOp) int { return cmp.Compare(a.inv, b.inv) }) {
		ops = slices.Clone(ops)
		slices.SortStableFunc(ops, func(a, b *lockOp) int { return cmp.Compare(a.inv, b.inv) })
	}
	taken := make([]bool, len(ops))
	var cands []int
	s, head := p.init, 0
	for left := len(ops); left > 0; left-- {
		for taken[head] {
			head++
		}
		// The window of operations that may come next: an operation may
		// come first when it was invoked before every other one returned
		// (strictly: an invocation at another's return is taken as after
		// it, which only narrows the choice). Past the second-earliest
		// return nothing can come first or change the two earliest returns.
		min1, min2, at1 := Never, Never, -1
		end := head
		for i := head; i < len(ops) && ops[i].inv < min2; i++ {
			end = i + 1
			if taken[i] {
				continue
			}
			switch r := ops[i].ret; {
			case r < min1:
				min1, min2, at1 = r, min1, i
			case r < min2:
				min2 = r
			}
		}
		cands = cands[:0]
		for i := head; i < end; i++ {
			bound := min1
			if i == at1 {
				bound = min2
			}
			if !taken[i] && ops[i].inv < bound {
				cands = append(cands, i)
			}
		}
		slices.SortStableFunc(cands, func(a, b int) int { return cmp.Compare(ops[a].ret, ops[b].ret) })
		next := -1
		for _, i := range cands {
			if legal, after := stepLock(s, ops[i]); legal {
				next, s = i, after
				break
			}
		}
		if next < 0 {
			return false
		}
		taken[next] = true
	}
	return true
}

// checkInOrder decides a piece whose operations follow one another, each
// invoked after the one before returned: such a piece has one order, so
// stepping the model through it gives porcupine's answer without its search
// (an uncontended lock's history is mostly made of such pieces). ok is false
// when two operations overlap, and porcupine decides.
func (p piece) checkInOrder() (res porcupine.CheckResult, ok bool) {
	for i := 1; i < len(p.ops); i++ {
		if p.ops[i].inv <= p.ops[i-1].ret {
			return porcupine.Unknown, false
		}
	}
	s := p.init
	for _, op := range p.ops {
		var legal bool
		if legal, s = stepLock(s, op); !legal {
			return porcupine.Illegal, true
		}
	}
	return porcupine.Ok, true
}

func visualize(ctx context.Context, p piece) *LockLinearization {
	if len(p.ops) == 0 {
		return nil
	}
	m := lockModel(p.init)
	timeout := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return nil
	}
	res, info := porcupine.CheckOperationsVerbose(m, p.operations(), timeout)
	if res == porcupine.Unknown {
		return nil
	}
	return &LockLinearization{Lock: p.lock, Result: res, Model: m, Info: info, Ops: len(p.ops)}
}

// explainIllegal narrows an illegal piece down to the smallest piece (cut
// at every isolated op) that is still illegal, and describes it.
func explainIllegal(ctx context.Context, p piece, histEnd int64) (Anomaly, *LockLinearization) {
	bad := p
	for _, sub := range cut(p.lock, p.ops, 1) {
		sub.init, sub.from = initFor(p, sub)
		if checkPiece(ctx, sub) == porcupine.Illegal {
			bad = sub
			break
		}
	}
	procs := map[int]bool{}
	var lines []history.Op
	if bad.from != nil {
		lines = append(lines, bad.from.lines()...) // the op that left the lock as the piece found it
	}
	start, end := bad.ops[0].inv, int64(0)
	for i, op := range bad.ops {
		procs[op.proc] = true
		if i < 40 {
			lines = append(lines, op.lines()...)
		}
		end = max(end, min(op.ret, histEnd))
	}
	var pl []int
	for p := range procs {
		pl = append(pl, p)
	}
	sort.Ints(pl)
	a := Anomaly{
		Kind: KindNonLinearizable, Check: CheckLinear, Lock: p.lock, Processes: pl,
		Start: start, End: end,
		Message: fmt.Sprintf("%s on lock %q from %s to %s, with the lock %s before, %s no legal order for an owner-aware mutex with leases",
			plural(len(bad.ops), "the operation", "the %d operations"), p.lock, fmtTime(start), fmtTime(end),
			describeLockState(bad.init), map[bool]string{true: "has", false: "have"}[len(bad.ops) == 1]),
		Ops: lines,
	}
	return a, visualize(ctx, bad)
}

// initFor is the state a sub-piece of p starts in, and the op that left
// it: p's own for the first, else the state after the isolated op that ends
// the previous sub-piece.
func initFor(p piece, sub piece) (lockState, *lockOp) {
	if len(sub.ops) == 0 || sub.ops[0] == p.ops[0] {
		return p.init, p.from
	}
	for i, op := range p.ops {
		if op == sub.ops[0] {
			prev := p.ops[i-1]
			if prev.kind == 'r' {
				return free, prev
			}
			return lockState{owner: prev.proc, expiry: prev.exp}, prev
		}
	}
	return p.init, p.from
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return fmt.Sprintf(many, n)
}
