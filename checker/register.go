package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockcheck/lockcheck/history"
)

// The register check: is the history of every key (history.FRegRead,
// FRegInsert, FRegCAS) linearizable for a compare-and-set register whose
// initial state is "no row"? It is the ground under the locks: an LWT that
// is not linearizable breaks every lock built on it, and this check tells a
// broken foundation from a broken lock.
//
// The model, per key (keys are independent registers, checked apart):
//
//   - an ok read that saw V (null: no row) is legal when the state is V;
//   - an ok insert of V is legal when there is no row, and makes V;
//   - an ok cas E->V is legal when the state is E, and makes V;
//   - a fail insert or cas that reports what it saw (Cassandra's
//     [applied]=false row) is a read of that state: for a cas one that
//     differs from E, for an insert a row. A rejected write is an
//     observation, as CASSANDRA-12126 is about;
//   - a fail without "seen" did nothing and showed nothing: it is left out,
//     as is an info read;
//   - an info insert or cas may take effect at any time after its
//     invocation, or never: it returns at the end of time, and taking
//     effect where its condition does not hold is a no-op (unless its value
//     was seen: then it took effect).
//
// Streaming: a key's operations are cut into pieces at isolated operations
// with a definite outcome (ok, or a fail with "seen"): no other operation of
// the model overlaps it, so every earlier one is ordered before it and every
// later one after it, and the state after it is what it wrote or saw. An
// info write may take effect after the cut, so it is carried into the
// pieces that follow, until a piece observed its value: with every written
// value unique on its key (the workload's are), a value seen proves its
// write took effect by then. A piece gets the unknown writes, its own and
// the carried ones, that its operations refer to (a value seen or
// expected): a write whose value no operation of the piece refers to can
// only have taken effect after all of them (no other operation accepts the
// state it makes), which changes nothing the piece judges. Memory grows with the keys, the unknown
// writes whose values were never seen, and the values written.

// CheckRegister is the name of the register check (judged when the history
// has register operations).
const CheckRegister = "linearizable-register"

// noRow is the state of a key without a row (canonical JSON text is never
// empty).
const noRow = ""

// regState is a key's value: its canonical JSON text, noRow when none.
type regState struct{ v string }

type regOp struct {
	kind   byte // 'r' read (also a rejected write with seen), 'i' insert, 'c' cas
	proc   int
	inv    int64
	ret    int64
	expect string // a cas's (and a rejected cas's) expected value
	val    string // what an insert or cas writes; what a read saw
	info   bool
	// must: an unknown write whose value, written by it alone, the piece
	// observed: it took effect, so it is no longer a no-op where its
	// condition fails (one place to linearize it instead of any).
	must   bool
	reject bool // a rejected write: a read that, for a cas, saw other than expect
	lines  []history.Op
}

// regCall is a register operation in flight or waiting in its key's queue.
type regCall struct {
	inv    history.Op
	ret    history.Op
	done   bool
	parsed history.RegValue
}

type regKey struct {
	name    string
	q       []*regCall // invocation order; q[head:] still waiting
	head    int
	piece   []*regOp
	init    regState
	from    *regOp
	maxRet  int64    // of the definite operations taken into the piece
	carry   []*regOp // info writes that may still take effect
	written map[string]int
	index   int
	nops    int
}

type regChecker struct {
	ctx   context.Context
	cfg   config
	keys  map[string]*regKey
	open  map[int]*regCall
	lin   *pool[regPiece] // from the first register operation on
	calls int
	st    statsAcc // the register's operations in the statistics
}

type regPiece struct {
	key   string
	init  regState
	from  *regOp
	ops   []*regOp
	index int
}

func newRegChecker(ctx context.Context, cfg config) *regChecker {
	return &regChecker{ctx: ctx, cfg: cfg, keys: map[string]*regKey{}, open: map[int]*regCall{}, st: newStatsAcc()}
}

// start starts porcupine's workers at the first register operation, so
// that a lock history costs nothing.
func (r *regChecker) start() {
	if r.lin == nil {
		r.lin = newPool(r.ctx, r.cfg.workers, checkRegPiece)
	}
}

// feed takes the next register line of a validated history.
func (r *regChecker) feed(op history.Op) {
	r.start()
	if op.Type == history.Invoke {
		c := &regCall{inv: op}
		_ = json.Unmarshal(op.Value, &c.parsed) // the reader validated it
		r.open[op.Process] = c
		r.calls++
		k := r.keys[op.Key]
		if k == nil {
			k = &regKey{name: op.Key, maxRet: -1, written: map[string]int{}}
			r.keys[op.Key] = k
		}
		if op.F != history.FRegRead && len(c.parsed.New) > 0 {
			k.written[elemKey(c.parsed.New)]++
		}
		k.q = append(k.q, c)
		r.advance(k, op.Time, false)
		return
	}
	c := r.open[op.Process]
	if c == nil {
		return
	}
	delete(r.open, op.Process)
	c.ret, c.done = op, true
	r.st.complete(&call{f: op.F, typ: op.Type, inv: c.inv.Time, ret: op.Time, ps: &procSt{counts: r.st.proc(op.Process)}})
	var v history.RegValue
	if json.Unmarshal(op.Value, &v) == nil {
		// A completion says what was seen; expect and new are the
		// invocation's unless it repeats them.
		c.parsed.Seen = v.Seen
	}
	r.advance(r.keys[c.inv.Key], op.Time, false)
}

// modelOp is c as an operation of the model, nil when the model leaves it
// out.
func (c *regCall) modelOp() *regOp {
	typ := history.Info
	if c.done {
		typ = c.ret.Type
	}
	op := &regOp{proc: c.inv.Process, inv: c.inv.Time, ret: Never, lines: []history.Op{c.inv}}
	if c.done {
		op.ret = c.ret.Time
		op.lines = append(op.lines, c.ret)
	}
	seen := func() string {
		if len(c.parsed.Seen) == 0 || string(c.parsed.Seen) == "null" {
			return noRow
		}
		return elemKey(c.parsed.Seen)
	}
	switch {
	case c.inv.F == history.FRegRead:
		if typ != history.OK {
			return nil
		}
		op.kind, op.val = 'r', seen()
	case typ == history.Fail:
		if len(c.parsed.Seen) == 0 {
			return nil
		}
		op.kind, op.val, op.reject = 'r', seen(), true
		if c.inv.F == history.FRegCAS || c.inv.F == history.FRegDelete {
			op.expect = elemKey(c.parsed.Expect)
		}
	case c.inv.F == history.FRegDelete:
		// A conditional delete is a compare-and-set to no row.
		op.kind, op.val, op.expect = 'c', noRow, elemKey(c.parsed.Expect)
		op.info = typ != history.OK
		if op.info {
			op.ret = Never
		}
	default:
		op.kind, op.val = 'i', elemKey(c.parsed.New)
		if c.inv.F == history.FRegCAS {
			op.kind, op.expect = 'c', elemKey(c.parsed.Expect)
		}
		op.info = typ != history.OK
		if op.info {
			op.ret = Never
		}
	}
	return op
}

// advance takes the calls at the head of k's queue that are settled; now is
// the time of the line being read.
func (r *regChecker) advance(k *regKey, now int64, final bool) {
	segMin := r.cfg.segmentMin
	for k.head < len(k.q) {
		c := k.q[k.head]
		if !c.done && !final {
			return
		}
		op := c.modelOp()
		if op == nil {
			k.pop()
			continue
		}
		cut := segMin > 0 && !op.info && k.maxRet < op.inv && len(k.piece)+1 >= segMin
		if cut {
			switch k.nextInvokedAfter(op.ret, now, final) {
			case waitMore:
				return
			case no:
				cut = false
			}
		}
		k.pop()
		k.piece = append(k.piece, op)
		k.nops++
		if !op.info {
			k.maxRet = max(k.maxRet, op.ret)
		}
		if cut {
			r.emit(k)
			k.from = op
			k.init = regState{v: op.val} // what it wrote, or what it saw
			k.maxRet = -1
		}
	}
}

func (k *regKey) pop() {
	k.q[k.head] = nil
	k.head++
	if k.head > 32 && k.head*2 > len(k.q) {
		n := copy(k.q, k.q[k.head:])
		clear(k.q[n:])
		k.q, k.head = k.q[:n], 0
	}
}

// nextInvokedAfter: is the next operation of the model after the head
// invoked after t?
func (k *regKey) nextInvokedAfter(t, now int64, final bool) answer {
	for _, c := range k.q[k.head+1:] {
		if c.inv.Time > t {
			return yes
		}
		if !c.done && !final {
			return waitMore
		}
		if c.modelOp() != nil {
			return no
		}
	}
	if final || now > t {
		return yes
	}
	return waitMore
}

// emit hands k's piece to porcupine with the carried writes it refers to,
// and carries on the info writes whose values it did not observe.
func (r *regChecker) emit(k *regKey) {
	refs := map[string]bool{}
	observed := map[string]bool{}
	for _, op := range k.piece {
		switch {
		case op.kind == 'r':
			// A rejected cas's expected value is no reference: it
			// accepts every state but that one.
			refs[op.val], observed[op.val] = true, true
		case op.kind == 'c':
			refs[op.expect] = true
			if !op.info {
				observed[op.expect] = true
			}
		}
	}
	var start int64
	if len(k.piece) > 0 {
		start = k.piece[0].inv
	}
	ops := make([]*regOp, 0, len(k.piece)+len(k.carry))
	for _, w := range k.carry {
		if refs[w.val] {
			cw := *w
			cw.inv = min(cw.inv, start) // it may take effect anywhere in this piece
			cw.must = observed[w.val] && k.written[w.val] == 1
			ops = append(ops, &cw)
		}
	}
	for _, op := range k.piece {
		// An unknown write whose value nothing here refers to changes
		// nothing the piece judges (see above); left in, each would double
		// porcupine's search, as it may take effect or not anywhere.
		if op.info && !refs[op.val] {
			continue
		}
		if op.info {
			op.must = observed[op.val] && k.written[op.val] == 1
		}
		ops = append(ops, op)
	}
	// What may still take effect after this piece: the carried and the new
	// info writes whose values were not observed here (a value written once
	// and observed proves its write took effect by then).
	var carry []*regOp
	for _, w := range append(k.carry, k.piece...) {
		if !w.info {
			continue
		}
		if observed[w.val] && k.written[w.val] == 1 {
			continue
		}
		carry = append(carry, w)
	}
	k.carry = carry
	p := regPiece{key: k.name, init: k.init, from: k.from, ops: ops, index: k.index}
	k.index++
	k.piece = nil
	r.lin.submit(p, len(p.ops))
}

// finish checks what is left and returns the check's outcome, and
// porcupine's data of the first illegal pieces for the report.
func (r *regChecker) finish(histEnd int64) (checkOutput, []LockLinearization, bool) {
	if r.lin == nil {
		return checkOutput{}, nil, false
	}
	for p, c := range r.open {
		// Invocations without completion (a killed run) count as pending.
		r.st.pendingCall(&call{f: c.inv.F, typ: history.Info, ps: &procSt{counts: r.st.proc(p)}})
	}
	names := make([]string, 0, len(r.keys))
	for n := range r.keys {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		k := r.keys[n]
		r.advance(k, Never, true)
		if len(k.piece) > 0 {
			r.emit(k)
		}
	}
	bad := r.lin.wait(func(p regPiece) (string, int) { return p.key, p.index })
	out := checkOutput{result: CheckResult{Name: CheckRegister, Verdict: Valid}}
	perKind := map[string]int{}
	var vis []LockLinearization
	for _, p := range bad {
		a, lin := explainRegister(r.ctx, p, histEnd)
		out.add(a, r.cfg.maxReports, perKind)
		if len(vis) < r.cfg.visualize && lin != nil {
			vis = append(vis, *lin)
		}
	}
	switch {
	case len(bad) > 0:
		out.result.Verdict = Invalid
		out.result.Detail = fmt.Sprintf("%d of %d pieces not linearizable (%d register ops on %d keys)", len(bad), r.lin.pieces, r.calls, len(r.keys))
	case r.lin.unknown > 0:
		out.result.Verdict = Unknown
		out.result.Detail = fmt.Sprintf("%d of %d pieces not decided in time (%d register ops on %d keys)", r.lin.unknown, r.lin.pieces, r.calls, len(r.keys))
	default:
		out.result.Detail = fmt.Sprintf("%d register ops on %d keys linearizable (%d pieces)", r.calls, len(r.keys), r.lin.pieces)
	}
	return out, vis, true
}

func regStep(state, input, _ any) (bool, any) {
	s := state.(regState)
	in := input.(*regOp)
	switch in.kind {
	case 'r':
		if in.reject && in.expect != "" && in.val == in.expect {
			return false, s // a cas rejected while the value it saw was the one it expected
		}
		if in.reject && in.expect == "" && in.val == noRow {
			return false, s // an insert rejected while there was no row
		}
		return s.v == in.val, s
	case 'i':
		if s.v == noRow {
			return true, regState{v: in.val}
		}
		return in.info && !in.must, s
	case 'c':
		if s.v == in.expect {
			return true, regState{v: in.val}
		}
		return in.info && !in.must, s
	}
	return false, s
}

func showVal(v string) string {
	if v == noRow {
		return "no row"
	}
	return v
}

func describeRegOp(input, _ any) string {
	in := input.(*regOp)
	var s string
	switch {
	case in.kind == 'r' && in.reject && in.expect != "":
		s = fmt.Sprintf("p%d cas %s rejected, saw %s", in.proc, in.expect, showVal(in.val))
	case in.kind == 'r' && in.reject:
		s = fmt.Sprintf("p%d insert rejected, saw %s", in.proc, showVal(in.val))
	case in.kind == 'r':
		s = fmt.Sprintf("p%d read %s", in.proc, showVal(in.val))
	case in.kind == 'i':
		s = fmt.Sprintf("p%d insert %s", in.proc, in.val)
	case in.val == noRow:
		s = fmt.Sprintf("p%d delete %s", in.proc, in.expect)
	default:
		s = fmt.Sprintf("p%d cas %s->%s", in.proc, in.expect, in.val)
	}
	if in.info {
		s += " (info)"
	}
	return s
}

func describeRegState(state any) string { return showVal(state.(regState).v) }

func regModel(init regState) porcupine.Model {
	return porcupine.Model{
		Init:              func() any { return init },
		Step:              regStep,
		DescribeOperation: describeRegOp,
		DescribeState:     describeRegState,
	}
}

func (p regPiece) operations() []porcupine.Operation { return operationsOf(p.ops) }

func (op *regOp) span() (proc int, inv, ret int64) { return op.proc, op.inv, op.ret }

func checkRegPiece(ctx context.Context, p regPiece) porcupine.CheckResult {
	timeout, ok := porcupineTimeout(ctx)
	if !ok {
		return porcupine.Unknown
	}
	return porcupine.CheckOperationsTimeout(regModel(p.init), p.operations(), timeout)
}

// explainRegister describes an illegal piece: its operations (the first
// 40), and porcupine's visualization of it.
func explainRegister(ctx context.Context, p regPiece, histEnd int64) (Anomaly, *LockLinearization) {
	procs := map[int]bool{}
	var lines []history.Op
	if p.from != nil {
		lines = append(lines, p.from.lines...)
	}
	start, end := int64(Never), int64(0)
	for i, op := range p.ops {
		procs[op.proc] = true
		if i < 40 {
			lines = append(lines, op.lines...)
		}
		start = min(start, op.inv)
		end = max(end, min(op.ret, histEnd))
	}
	var pl []int
	for q := range procs {
		pl = append(pl, q)
	}
	sort.Ints(pl)
	a := Anomaly{
		Kind: KindNonLinearizable, Check: CheckRegister, Lock: p.key, Processes: pl, Start: start, End: end,
		Message: fmt.Sprintf("%s on register key %q from %s to %s, with %s before, %s no legal order for a compare-and-set register",
			plural(len(p.ops), "the operation", "the %d operations"), p.key, fmtTime(start), fmtTime(end),
			showVal(p.init.v), map[bool]string{true: "has", false: "have"}[len(p.ops) == 1]),
		Ops: lines,
	}
	m := regModel(p.init)
	timeout := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return a, nil
	}
	res, info := porcupine.CheckOperationsVerbose(m, p.operations(), timeout)
	if res == porcupine.Unknown {
		return a, nil
	}
	return a, &LockLinearization{Lock: "register " + p.key, Result: res, Model: m, Info: info, Ops: len(p.ops)}
}

// addRegister folds the register check into res: judged, and when the
// history has no lock operations, the lock checks are marked skipped (they
// had nothing to judge).
func addRegister(res *Result, out checkOutput, vis []LockLinearization, locks int) {
	if locks == 0 {
		for i := range res.Checks {
			if res.Checks[i].Name != CheckStatistics {
				res.Checks[i].Skipped, res.Checks[i].Judged = true, false
			}
		}
	}
	cr := out.result
	cr.Judged = true
	cr.Anomalies = len(out.anomalies) + out.omitted
	res.Verdict = Merge(res.Verdict, cr.Verdict)
	res.Anomalies = append(res.Anomalies, out.anomalies...)
	res.AnomaliesOmitted += out.omitted
	sortAnomalies(res.Anomalies)
	res.Linearizability = append(vis, res.Linearizability...)
	// The register's check goes before the statistics, which stay last.
	n := len(res.Checks)
	if n > 0 && res.Checks[n-1].Name == CheckStatistics {
		res.Checks = append(res.Checks[:n-1], cr, res.Checks[n-1])
	} else {
		res.Checks = append(res.Checks, cr)
	}
}
