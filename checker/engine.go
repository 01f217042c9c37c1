package checker

import (
	"context"
	"encoding/json"
	"math"
	"sort"

	"github.com/lockcheck/lockcheck/history"
)

// The checks stream: ops arrive in file order and each lock's state keeps
// only what can still matter. A hold is dropped once it can overlap nothing
// to come, an operation of the lock object once the piece of history it
// belongs to has been handed to porcupine, an add once it has been judged
// (its element stays, as every later read must hold it). Memory therefore
// grows with the locks, the concurrency and the elements of the protected
// sets, not with the length of the history.

// Never is the return time of an operation without completion, and the end
// of a hold or lease that does not expire.
const Never int64 = math.MaxInt64

// call is a client operation: its invocation paired with its completion.
type call struct {
	proc    int
	f       string
	lock    string
	typ     history.Type // ok, fail or info (info also for a missing completion)
	inv     int64        // invocation time
	ret     int64        // completion time; Never when there is none
	leaseMS int64        // from the completion, else the invoke
	done    bool         // its completion was read
	// The rest of its two lines, for opsOf to give them back: a call is made
	// for every invocation, and two whole ops are twice the size, with
	// pointers the collector follows.
	invLine, retLine line // retLine valid when done
	// What the lock had acknowledged when this call was invoked (fencing.go):
	// for an acquire, the greatest token granted; for an add, the write of
	// the newest grant and the write of the greatest token.
	snapGrant, snapNewest, snapToken *fenceRef
	l                                *lockSt // of lock
	elem                             int32   // an add's element (resource.go)
	kept                             bool    // a read kept for a later verdict (resource.go: deferred)
	ps                               *procSt
}

// line is what a call keeps of one of its lines beyond its own fields
// (process, f, lock, times, the completion's type).
type line struct {
	index     int64
	leaseMS   int64
	value     json.RawMessage
	node, err string
	noLock    bool // a completion that left its lock out (it is its invocation's)
}

func lineOf(op history.Op) line {
	return line{index: op.Index, leaseMS: op.LeaseMS, value: op.Value, node: op.Node, err: op.Error, noLock: op.Lock == ""}
}

// invokeOp and completionOp give the call's lines back as they were read.
func (c *call) invokeOp() history.Op {
	return c.op(c.invLine, history.Invoke, c.inv)
}

func (c *call) completionOp() history.Op {
	return c.op(c.retLine, c.typ, c.ret)
}

func (c *call) op(l line, typ history.Type, t int64) history.Op {
	op := history.Op{Index: l.index, Time: t, Process: c.proc, Type: typ, F: c.f, Lock: c.lock,
		Value: l.value, LeaseMS: l.leaseMS, Node: l.node, Error: l.err}
	if l.noLock {
		op.Lock = ""
	}
	return op
}

// ops returns the invoke and completion lines of calls, for an anomaly.
func opsOf(cs ...*call) []history.Op {
	var out []history.Op
	for _, c := range cs {
		if c == nil {
			continue
		}
		out = append(out, c.invokeOp())
		if c.done {
			out = append(out, c.completionOp())
		}
	}
	return out
}

// expiry is when a grant made by an op invoked at inv with lease leaseMS
// stops being valid.
func expiry(inv, leaseMS int64) int64 {
	if leaseMS <= 0 || leaseMS >= (Never-inv)/1e6 {
		return Never // no lease, or one longer than time can count
	}
	return inv + leaseMS*1e6
}

// procSt is what the checks keep of one process: its call in flight and its
// latest hold on each of the last few locks it held. A process that took
// many locks over time forgets the oldest of its closed holds (keeping a bit
// that it held that lock), so that memory does not grow with processes times
// locks.
type procSt struct {
	open   *call
	counts *Counts    // its statistics
	recent []*holdRec // its latest hold per lock, oldest first
	locks  []*lockSt  // recent[i].l, to search without touching the holds
	held   []uint64   // by lock id: it held that lock (its hold may be forgotten)
	// forgotAt bounds the ends of its forgotten holds (and so their grants'
	// returns).
	forgotAt int64
}

// keepClosed is how many closed holds a process remembers (one per lock, in
// each shard): its later calls on those locks are judged against them
// exactly; on an older one, as a hold that ended by forgotAt.
const keepClosed = 2

// latest returns p's latest hold on l, if remembered.
func (p *procSt) latest(l *lockSt) *holdRec {
	for i := len(p.locks) - 1; i >= 0; i-- {
		if p.locks[i] == l {
			return p.recent[i]
		}
	}
	return nil
}

// forgot tells whether p held l once but no longer remembers that hold.
func (p *procSt) forgot(l *lockSt) bool {
	w := l.id / 64
	return w < len(p.held) && p.held[w]&(1<<(l.id%64)) != 0 && p.latest(l) == nil
}

// remember makes h p's latest hold on its lock, forgetting the oldest
// closed holds beyond keepClosed.
func (p *procSt) remember(h *holdRec) {
	l := h.l
	kept := p.recent[:0]
	closed := 0
	for _, o := range p.recent {
		if o.l != l {
			kept = append(kept, o)
			if !o.open {
				closed++
			}
		}
	}
	clear(p.recent[len(kept):])
	p.recent = append(kept, h)
	for closed > keepClosed {
		for i, o := range p.recent {
			if !o.open {
				p.forgotAt = max(p.forgotAt, o.End)
				o.l.fence.forget(o)
				p.recent = append(p.recent[:i], p.recent[i+1:]...)
				p.recent[len(p.recent):cap(p.recent)][0] = nil
				closed--
				break
			}
		}
	}
	p.locks = p.locks[:0]
	for _, o := range p.recent {
		p.locks = append(p.locks, o.l)
	}
	w := l.id / 64
	for len(p.held) <= w {
		p.held = append(p.held, 0)
	}
	p.held[w] |= 1 << (l.id % 64)
}

// engine runs every check over one pass of the history.
type engine struct {
	ctx context.Context
	cfg config

	holdsOnly bool // Holds: only the holds are wanted
	keepHolds bool // keep every hold for the report's timeline

	meta   *history.Meta
	fenced bool
	end    int64 // time of the last line
	procs  map[int]*procSt
	locks  map[string]*lockSt
	nlocks int
	// lastLock caches the latest lock looked up: lines of one lock come in
	// runs.
	lastLock *lockSt
	pending  int

	st    statsAcc
	holds []Hold
	tl    *timelineRec // the grants and leases, when asked for (timeline.go)

	mutex, resource, fencing checkOutput
	mutexKinds               map[string]int
	resKinds                 map[string]int
	fenceKinds               map[string]int
	nFence                   int
	nUnordered               int // locks whose tokens mix kinds (fencing.go)
	nNoToken                 int // ok acquires without a token
	nOverlap                 int
	nHolds                   int
	nResAnom                 int
	noFinal                  int
	uncovered                int // acknowledged adds no read covers (resState.finish)
	uncoveredLocks           int

	callPool []*call
	lin      *linRunner  // shared by the shards
	visQ     []*linQueue // this shard's candidates for a visualization, by name
}

func newEngine(ctx context.Context, cfg config) *engine {
	e := &engine{
		ctx: ctx, cfg: cfg,
		procs: map[int]*procSt{}, locks: map[string]*lockSt{},
		st:         newStatsAcc(),
		mutex:      checkOutput{result: CheckResult{Name: CheckMutex, Verdict: Valid}},
		resource:   checkOutput{result: CheckResult{Name: CheckResource, Verdict: Valid}},
		fencing:    checkOutput{result: CheckResult{Name: CheckFencing, Verdict: Valid}},
		mutexKinds: map[string]int{}, resKinds: map[string]int{}, fenceKinds: map[string]int{},
	}
	e.tl = newTimelineRec(cfg, e)
	return e
}

func (e *engine) lock(name string) *lockSt {
	if l := e.lastLock; l != nil && l.name == name {
		return l
	}
	l := e.locks[name]
	if l == nil {
		l = newLockSt(e, name)
		l.id = e.nlocks
		e.nlocks++
		e.locks[name] = l
	}
	e.lastLock = l
	return l
}

func (e *engine) proc(p int) *procSt {
	ps := e.procs[p]
	if ps == nil {
		ps = &procSt{counts: e.st.proc(p)}
		e.procs[p] = ps
	}
	return ps
}

// openCall is p's call in flight, if any.
func (e *engine) openCall(p int) *call {
	if ps := e.procs[p]; ps != nil {
		return ps.open
	}
	return nil
}

// feed takes the next op of a validated history.
func (e *engine) feed(op history.Op) {
	e.end = op.Time
	if op.Process < 0 {
		if op.F == history.FMeta {
			e.feedMeta(op)
		}
		return
	}
	if op.Type != history.Invoke {
		e.completeOp(op)
		return
	}
	ps := e.proc(op.Process)
	c := e.newCall()
	*c = call{proc: op.Process, f: op.F, lock: op.Lock, typ: history.Info,
		inv: op.Time, ret: Never, leaseMS: op.LeaseMS, invLine: lineOf(op), ps: ps}
	ps.open = c
	if c.lock != "" {
		c.l = e.lock(c.lock)
		c.l.invoke(c)
	}
}

// completeOp takes a completion. A shard also sees the completions of other
// shards' calls that may concern it (see multi.feed): it takes those only
// to retire their process after an info, leaving this shard's locks it held
// with no lease stuck.
func (e *engine) completeOp(op history.Op) {
	ps := e.procs[op.Process]
	var c *call
	if ps != nil {
		c = ps.open
	}
	if c == nil {
		if op.Type == history.Info {
			if ps != nil {
				e.abandonHolds(ps, op, nil)
			}
			e.retireProc(op.Process)
		}
		return
	}
	ps.open = nil
	c.typ, c.ret, c.retLine, c.done = op.Type, op.Time, lineOf(op), true
	if op.LeaseMS > 0 {
		c.leaseMS = op.LeaseMS
	}
	if c.typ == history.OK && c.l != nil && c.f == history.FRenew && c.leaseMS <= 0 {
		// An ok renew without lease_ms renews for the lease its process's
		// latest grant had, rather than forever.
		if h := ps.latest(c.l); h != nil {
			c.leaseMS = h.grantLease
		}
	}
	e.st.complete(c)
	proc, typ := c.proc, c.typ
	if typ == history.Info {
		e.abandonHolds(ps, op, c)
	}
	if c.l != nil {
		c.l.complete(c) // may recycle c (linQueue.pop)
	}
	if typ == history.Info {
		e.retireProc(proc)
	}
	// An add or a read is judged at its completion, and nothing keeps it
	// after (a fenced lock's maxima keep writes; a read that held an
	// element whose adds are still running waits for them).
	if (c.f == history.FAdd && !e.fenced) || (c.f == history.FRead && !c.kept) {
		e.recycle(c)
	}
}

// newCall and recycle reuse the calls that nothing keeps after they are
// judged: most of a long history's calls, and most of the garbage.
func (e *engine) newCall() *call {
	if n := len(e.callPool); n > 0 {
		c := e.callPool[n-1]
		e.callPool = e.callPool[:n-1]
		return c
	}
	return new(call)
}

func (e *engine) recycle(c *call) {
	*c = call{}
	if len(e.callPool) < 1024 {
		e.callPool = append(e.callPool, c)
	}
}

// retireProc forgets a process that will invoke nothing more (it completed
// with info). Its open holds stay with their locks: they last until their
// lease runs out.
func (e *engine) retireProc(p int) {
	if ps := e.procs[p]; ps != nil {
		for _, h := range ps.recent {
			delete(h.l.lq.lease, p)
		}
		delete(e.procs, p)
	}
}

func (e *engine) feedMeta(op history.Op) {
	if e.meta != nil {
		return
	}
	var m history.Meta
	if err := jsonUnmarshal(op.Value, &m); err == nil {
		e.meta = &m
		e.fenced = m.Promise == history.PromiseFenced
	}
}

// finishShard checks what is left of one shard's locks at the end of the
// history (the time of its last line, end).
func (e *engine) finishShard(end int64) {
	e.end = end
	// Invocations without completion (a killed run) are info calls.
	var procs []int
	for p, ps := range e.procs {
		if ps.open != nil {
			procs = append(procs, p)
		}
	}
	sort.Ints(procs)
	e.pending = len(procs)
	for _, p := range procs {
		e.st.pendingCall(e.procs[p].open)
	}
	names := make([]string, 0, len(e.locks))
	for n := range e.locks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e.locks[n].finish()
	}
}

// assemble makes the result, on the engine that merged the shards'.
func (e *engine) assemble(visQ []*linQueue) Result {
	names := make([]string, 0, len(e.locks))
	for n := range e.locks {
		names = append(names, n)
	}
	sort.Strings(names)
	res := Result{Anomalies: []Anomaly{}, Findings: []Anomaly{}, Pending: e.pending}
	if e.holdsOnly {
		res.Holds = e.holds
		return res
	}
	if e.meta != nil {
		res.Meta = e.meta
		res.Promise = e.meta.Promise
	}
	linear, vis := e.lin.finish(e.end, visQ)
	res.Linearizability = vis
	res.Stats = e.st.stats(e.end, len(e.locks))
	stats := checkOutput{result: CheckResult{Name: CheckStatistics, Verdict: Valid, Detail: res.Stats.summary()}}
	e.finishMutex(len(names))
	e.finishResource(names)
	e.finishFencing()
	if e.keepHolds {
		sortHolds(e.holds)
		res.Holds = e.holds
	}
	res.Verdict = Valid
	for _, out := range []*checkOutput{&e.mutex, &linear, &e.fencing, &e.resource, &stats} {
		cr := out.result
		cr.Judged = cr.Name != CheckStatistics && !cr.Skipped
		if e.fenced && (cr.Name == CheckMutex || cr.Name == CheckLinear) {
			cr.Judged = false
		}
		cr.Anomalies = len(out.anomalies) + out.omitted
		if cr.Judged {
			res.Verdict = Merge(res.Verdict, cr.Verdict)
			res.Anomalies = append(res.Anomalies, out.anomalies...)
			res.AnomaliesOmitted += out.omitted
		} else {
			res.Findings = append(res.Findings, out.anomalies...)
		}
		res.Findings = append(res.Findings, out.findings...)
		res.Checks = append(res.Checks, cr)
	}
	sortAnomalies(res.Anomalies)
	sortAnomalies(res.Findings)
	return res
}

func sortHolds(hs []Hold) {
	sort.Slice(hs, func(i, j int) bool {
		if hs[i].Start != hs[j].Start {
			return hs[i].Start < hs[j].Start
		}
		return hs[i].Process < hs[j].Process
	})
}

// lockSt is the state of one lock: its holds, its lock-object operations
// waiting to be cut into pieces, and its protected set.
type lockSt struct {
	e    *engine
	name string
	id   int // dense, in order of first use

	// Holds (mutex.go).
	openHolds []*holdRec // at most one per process; few at a time
	closed    []*holdRec // closed holds that may still overlap something

	// Operations of the lock object, in invocation order (linear.go).
	lq linQueue

	// The protected set (resource.go).
	res *resState

	// What the fencing rules compare against (fencing.go).
	fence fenceSt

	// stuck is set once the lock is held for good (stuck.go).
	stuck *stuckRec
}

func newLockSt(e *engine, name string) *lockSt {
	l := &lockSt{e: e, name: name}
	l.lq.setup(l)
	return l
}

func isLockObjF(f string) bool {
	return f == history.FAcquire || f == history.FRenew || f == history.FRelease
}

func (l *lockSt) invoke(c *call) {
	l.expire(c.inv)
	if !l.e.holdsOnly {
		l.fence.invoke(c)
	}
	switch {
	case c.f == history.FRelease:
		l.releaseInvoked(c)
	case c.f == history.FAdd || c.f == history.FRead:
		if !l.e.holdsOnly {
			l.resState().invoke(c)
		}
	}
	if isLockObjF(c.f) && !l.e.holdsOnly {
		l.lq.invoke(c)
	}
	if l.e.tl != nil {
		l.e.tl.invoked(l, c)
	}
}

func (l *lockSt) complete(c *call) {
	l.countStuckAcquire(c)
	if c.typ == history.OK && (c.f == history.FAcquire || c.f == history.FRenew) {
		l.granted(c)
	}
	if c.typ == history.Fail && c.f == history.FRelease {
		// A release that definitely failed released nothing: the holder
		// still holds what it held (its hold still ends at the release's
		// invocation for exclusion, which asks less of the lock).
		l.releaseFailed(c)
	}
	if l.e.tl != nil {
		l.e.tl.completed(l, c)
	}
	l.expire(c.ret)
	if l.e.holdsOnly {
		return
	}
	switch c.f {
	case history.FAdd, history.FRead:
		l.resState().complete(c)
	}
	if isLockObjF(c.f) {
		l.lq.complete(c)
	}
}

func (l *lockSt) finish() {
	for _, c := range l.pendingCalls() {
		// A call without completion is an info call that never returns.
		if c.f == history.FAdd && !l.e.holdsOnly {
			l.resState().complete(c)
		}
	}
	if l.stuck != nil { // pendingCalls walks every process: only when it counts
		for _, c := range l.pendingCalls() {
			l.countStuckAcquire(c)
		}
	}
	l.closeAll(l.e.end)
	if l.e.holdsOnly {
		return
	}
	l.stuckFinding()
	l.lq.finish()
	if l.res != nil {
		l.res.finish()
	}
}

// pendingCalls are the lock's calls still without completion at the end.
func (l *lockSt) pendingCalls() []*call {
	var out []*call
	for _, ps := range l.e.procs {
		if c := ps.open; c != nil && c.l == l {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].invLine.index < out[j].invLine.index })
	return out
}
