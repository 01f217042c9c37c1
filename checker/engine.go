package checker

import (
	"context"
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
	invOp   history.Op
	retOp   history.Op // valid when done
	// What the lock had acknowledged when this call was invoked (fencing.go):
	// for an acquire, the greatest token granted; for an add, the write of
	// the newest grant and the write of the greatest token.
	snapGrant, snapNewest, snapToken *fenceRef
}

// ops returns the invoke and completion lines of calls, for an anomaly.
func opsOf(cs ...*call) []history.Op {
	var out []history.Op
	for _, c := range cs {
		if c == nil {
			continue
		}
		out = append(out, c.invOp)
		if c.done {
			out = append(out, c.retOp)
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

type procLock struct {
	proc int
	lock string
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
	open   map[int]*call
	locks  map[string]*lockSt
	grant  map[procLock]int64 // lease_ms of each process's latest ok acquire
	// procLocks lists the locks that keep something of a process, so that
	// it is dropped when the process retires (completes with info: it may
	// invoke nothing more).
	procLocks map[int][]*lockSt
	pending   int

	st    statsAcc
	holds []Hold

	mutex, resource, fencing checkOutput
	mutexKinds               map[string]int
	resKinds                 map[string]int
	fenceKinds               map[string]int
	nFence                   int
	nOverlap                 int
	nHolds                   int
	nResAnom                 int
	noFinal                  int

	lin *linRunner
}

func newEngine(ctx context.Context, cfg config) *engine {
	e := &engine{
		ctx: ctx, cfg: cfg,
		open: map[int]*call{}, locks: map[string]*lockSt{}, grant: map[procLock]int64{}, procLocks: map[int][]*lockSt{},
		st:         newStatsAcc(),
		mutex:      checkOutput{result: CheckResult{Name: CheckMutex, Verdict: Valid}},
		resource:   checkOutput{result: CheckResult{Name: CheckResource, Verdict: Valid}},
		fencing:    checkOutput{result: CheckResult{Name: CheckFencing, Verdict: Valid}},
		mutexKinds: map[string]int{}, resKinds: map[string]int{}, fenceKinds: map[string]int{},
	}
	return e
}

func (e *engine) start() {
	if !e.holdsOnly {
		e.lin = newLinRunner(e.ctx, e.cfg)
	}
}

func (e *engine) lock(name string) *lockSt {
	l := e.locks[name]
	if l == nil {
		l = newLockSt(e, name)
		e.locks[name] = l
	}
	return l
}

// feed takes the next op of a validated history.
func (e *engine) feed(op history.Op) {
	e.end = op.Time
	e.st.events++
	if op.Process < 0 {
		e.st.nemesis++
		if op.F == history.FMeta {
			e.feedMeta(op)
		}
		return
	}
	if op.Type == history.Invoke {
		c := &call{proc: op.Process, f: op.F, lock: op.Lock, typ: history.Info,
			inv: op.Time, ret: Never, leaseMS: op.LeaseMS, invOp: op}
		e.open[op.Process] = c
		if c.lock != "" {
			e.lock(c.lock).invoke(c)
		}
		return
	}
	c := e.open[op.Process]
	if c == nil {
		return // refused by validation
	}
	delete(e.open, op.Process)
	c.typ, c.ret, c.retOp, c.done = op.Type, op.Time, op, true
	if op.LeaseMS > 0 {
		c.leaseMS = op.LeaseMS
	}
	if c.typ == history.OK && c.lock != "" {
		// An ok renew without lease_ms renews for the lease its process's
		// grant had, rather than forever.
		pl := procLock{c.proc, c.lock}
		switch c.f {
		case history.FAcquire:
			e.grant[pl] = c.leaseMS
		case history.FRenew:
			if c.leaseMS <= 0 {
				c.leaseMS = e.grant[pl]
			}
		}
	}
	e.st.complete(c)
	if c.lock != "" {
		e.lock(c.lock).complete(c)
	}
	if c.typ == history.Info {
		e.retireProc(c.proc)
	}
}

// retireProc forgets what the locks keep of a process that will invoke
// nothing more. Its open holds stay: they last until their lease runs out.
func (e *engine) retireProc(p int) {
	for _, l := range e.procLocks[p] {
		delete(l.last, p)
		delete(e.grant, procLock{p, l.name})
		delete(l.lq.lease, p)
	}
	delete(e.procLocks, p)
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

// finish checks what is left at the end of the history and assembles the
// result.
func (e *engine) finish() Result {
	// Invocations without completion (a killed run) are info calls.
	procs := make([]int, 0, len(e.open))
	for p := range e.open {
		procs = append(procs, p)
	}
	sort.Ints(procs)
	e.pending = len(procs)
	for _, p := range procs {
		c := e.open[p]
		e.st.pendingCall(c)
	}
	names := make([]string, 0, len(e.locks))
	for n := range e.locks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e.locks[n].finish()
	}
	res := Result{Anomalies: []Anomaly{}, Findings: []Anomaly{}, Pending: e.pending}
	if e.holdsOnly {
		res.Holds = e.holds
		return res
	}
	if e.meta != nil {
		res.Meta = e.meta
		res.Promise = e.meta.Promise
	}
	linear, vis := e.lin.finish(e.end)
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

	// Holds (mutex.go).
	openHolds map[int]*holdRec // process -> its open hold
	closed    []*holdRec       // closed holds that may still overlap something
	last      map[int]*holdRec // process -> its latest hold

	// Operations of the lock object, in invocation order (linear.go).
	lq linQueue

	// The protected set (resource.go).
	res *resState

	// What the fencing rules compare against (fencing.go).
	fence fenceSt
}

func newLockSt(e *engine, name string) *lockSt {
	l := &lockSt{e: e, name: name, openHolds: map[int]*holdRec{}, last: map[int]*holdRec{}}
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
}

func (l *lockSt) complete(c *call) {
	if c.typ == history.OK && (c.f == history.FAcquire || c.f == history.FRenew) {
		l.granted(c)
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
	l.closeAll(l.e.end)
	if l.e.holdsOnly {
		return
	}
	l.lq.finish()
	if l.res != nil {
		l.res.finish()
	}
}

// pendingCalls are the lock's calls still without completion at the end.
func (l *lockSt) pendingCalls() []*call {
	var out []*call
	for _, c := range l.e.open {
		if c.lock == l.name {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].invOp.Index < out[j].invOp.Index })
	return out
}
