package checker

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Liveness is the second question a lock's user asks, after "can two hold
// it?": "what happens when the holder dies?". It is read from the history
// alone, per lock:
//
//   - availability: the share of the clients' run in which an acquire could
//     be granted within the acquire time-out. A moment counts as available
//     when a live process held the lock then (an acquire waits on it, which
//     is contention, not a lock that cannot be had) or when a grant came
//     within the acquire time-out after it; the rest is unavailable: a lock
//     left held by a dead process, a partition no acquire got through, a
//     lease waited out after its holder died.
//   - stuck periods: no grant for longer than the stuck bound after the
//     lock's last holder died or lost its answer. What leaves a lock held
//     with nobody to release it is one of: a holder whose operation (the
//     harness's write, a renew) came back unknown, so that its process
//     was retired with the grant; an acquire answered unknown that may
//     have taken effect; a release answered unknown that may not have;
//     a holder killed by client-kill. The period names that operation.
//   - refused periods: no grant for longer than the stuck bound after the
//     lock's last holder released it (answered ok) while every acquire
//     asked since was refused (answered fail). The history says the lock
//     was free, so one of its definite answers was wrong: a release
//     answered ok that did not take effect, or an acquire answered fail
//     that did (a lock that decides its grant by a read that can miss its
//     own take). The history cannot tell which: the period names both,
//     the release and the first acquire refused after it.
//
// Stuck is a liveness result, never a mutual-exclusion violation: it never
// makes a verdict invalid. A scenario row asserts it ("frees within",
// "stays stuck").
type Liveness struct {
	// AcquireTimeoutMS is the acquire time-out availability is counted
	// with; StuckBoundMS the bound past which a lock left held is stuck.
	AcquireTimeoutMS int64 `json:"acquire_timeout_ms"`
	StuckBoundMS     int64 `json:"stuck_bound_ms"`
	// Start and End bound the clients' run: the first and last lock
	// operation of any client, ns since the run started.
	Start int64          `json:"start"`
	End   int64          `json:"end"`
	Locks []LockLiveness `json:"locks"`
}

// LockLiveness is one lock's availability and stuck periods.
type LockLiveness struct {
	Lock string `json:"lock"`
	// Availability is the share of [Start, End] that was available, 0..1.
	Availability  float64       `json:"availability"`
	UnavailableMS int64         `json:"unavailable_ms"`
	Grants        int           `json:"grants"`
	Stuck         []StuckPeriod `json:"stuck,omitempty"`
}

// Causes of a stuck period: the operation that left the lock held.
const (
	CauseWriteUnknown   = "write-unknown"   // the holder's add (or another operation of it) came back unknown
	CauseRenewUnknown   = "renew-unknown"   // the holder's renew came back unknown
	CauseAcquireUnknown = "acquire-unknown" // an acquire answered unknown: it may have taken effect
	CauseReleaseUnknown = "release-unknown" // a release answered unknown: it may not have taken effect
	CauseKilled         = "client-kill"     // the holder's process was killed (history.ClientKillStart)
	CauseReplaced       = "process-gone"    // a new process of the holder's client started, the old one said nothing
	// CauseRefused: free after a release answered ok, yet every acquire
	// was refused; Ops are the release and the first refused acquire.
	CauseRefused = "refused-after-release"
)

// StuckPeriod is a lock left held with nobody to release it for longer than
// the stuck bound.
type StuckPeriod struct {
	Lock  string `json:"lock"`
	Start int64  `json:"start"` // the moment the lock was left held: ns since the run started
	End   int64  `json:"end"`   // the grant that freed it, or the end of the clients' run
	// Freed is true when a grant ended the period (a lease expired, the
	// recipe's own recovery), false when it lasted to the end.
	Freed   bool   `json:"freed"`
	Cause   string `json:"cause"`
	Process int    `json:"process"` // the process that left it held
	// Client is that process's client, -1 when the history does not say.
	Client int `json:"client"`
	// Asked counts the acquires invoked during the period (for a refused
	// period, the acquires refused).
	Asked int          `json:"asked"`
	Ops   []history.Op `json:"ops,omitempty"` // the operation that left it held (and the grant that freed it)
	// Faults are, for a refused period, the fault kinds in effect during
	// it: they may have kept every acquire out instead.
	Faults  []string `json:"faults,omitempty"`
	Message string   `json:"message"`
}

// Duration is the period's length.
func (s StuckPeriod) Duration() time.Duration { return time.Duration(s.End - s.Start) }

// Default liveness settings: the workload's acquire time-out, and a stuck
// bound that a lease lock freeing after its TTL never exceeds (its TTL plus
// two acquire time-outs: one waited out on the held lock, one to be
// granted after the expiry).
const (
	DefaultAcquireTimeout = 5 * time.Second
	stuckSlackTimeouts    = 2
)

// Meta config keys the run records its liveness settings under
// (ConfigAcquireTimeout: the workload's acquire time-out; ConfigStuckBound:
// run --stuck-bound), read when Check has no option for them.
const (
	ConfigAcquireTimeout = "acquire-timeout"
	ConfigStuckBound     = "stuck-bound"
)

// DefaultStuckBound is the stuck bound of a lock whose TTL is ttl (zero: no
// TTL) under acquire time-out acq.
func DefaultStuckBound(ttl, acq time.Duration) time.Duration {
	return ttl + stuckSlackTimeouts*acq
}

// WithAcquireTimeout sets the acquire time-out availability is counted
// with (default: the meta line's, else DefaultAcquireTimeout).
func WithAcquireTimeout(d time.Duration) Option { return func(c *config) { c.acquireTimeout = d } }

// WithStuckBound sets how long a lock left held may go without a grant
// before it is stuck (default: the meta line's, else DefaultStuckBound of
// the run's TTL). A bound below a lease lock's TTL would call every lease
// waited out stuck: the CLI refuses it.
func WithStuckBound(d time.Duration) Option { return func(c *config) { c.stuckBound = d } }

// liveHold is a live process's hold of a lock.
type liveHold struct {
	proc   int
	expiry int64 // Never without a lease
	grant  history.Op
}

// holders are a lock's live holds: one or none, but for a lock that
// grants twice, so a slice scanned beats a map.
type holders []liveHold

func (hs holders) get(p int) (liveHold, bool) {
	for _, h := range hs {
		if h.proc == p {
			return h, true
		}
	}
	return liveHold{}, false
}

// set adds or replaces p's hold; it says whether p held before.
func (hs *holders) set(h liveHold) bool {
	for i := range *hs {
		if (*hs)[i].proc == h.proc {
			(*hs)[i] = h
			return true
		}
	}
	*hs = append(*hs, h)
	return false
}

func (hs *holders) drop(p int) bool {
	n := len(*hs)
	*hs = slices.DeleteFunc(*hs, func(h liveHold) bool { return h.proc == p })
	return len(*hs) < n
}

// leftHeld is an event that may have left a lock held with nobody to release it.
type leftHeld struct {
	t     int64
	proc  int
	cause string
	op    history.Op
	rank  int // a holder's own end outranks an acquire that may have taken effect
}

type liveLock struct {
	name    string
	holders holders
	// freeSince is when the last live hold ended (or the run began); only
	// meaningful while holders is empty.
	freeSince   int64
	unavailable int64
	grants      int
	// left is the strongest event since the last grant that may have left
	// the lock held; leftAt the earliest such event's moment.
	left *leftHeld
	// leftFree is when the lock was left with no live holder after the
	// event (-1: a live holder still holds it): the period starts there,
	// since until then a live holder could still release it.
	leftFree int64
	asked    int
	periods  []StuckPeriod
	acq      int64 // the acquire time-out, ns
	minExp   int64 // the earliest expiry among holders (Never: none)
	// asking counts the acquires of the lock in flight; askFrom is when
	// someone first asked for it since it became free (-1: nobody yet).
	// A free lock nobody asks for is idle, not unavailable.
	asking  int
	askFrom int64
	// lastRelease is the release (answered ok) that ended the last live
	// hold, nil when the last hold ended otherwise (a lease ran out, its
	// process died); refused is an open refused period after it.
	lastRelease *history.Op
	refused     *refusedRun
}

// refusedRun is a lock free by the history (released) whose acquires have
// all been refused since.
type refusedRun struct {
	start   int64
	release history.Op
	first   history.Op // the first refused acquire's completion
	firstAt int64      // its invocation
	fails   int
	// faults are the fault kinds in effect at some moment of the period:
	// they, not a wrong answer, may have kept every acquire out.
	faults []string
}

type liveCall struct {
	f    string
	l    *liveLock // the invocation's lock; nil when it named none
	invT int64
}

// liveness follows every lock operation in history order; memory grows
// with the locks, the processes in flight and the stuck periods only.
type liveness struct {
	cfg        config
	acq        time.Duration // resolved at the first lock operation (the meta line comes first)
	locks      map[string]*liveLock
	order      []string
	calls      map[int]liveCall    // open invocations by process
	held       map[int][]*liveLock // process -> locks it holds live
	lastName   string              // lock's cache
	lastLock   *liveLock
	latest     map[int]int // client -> its latest process seen
	killed     map[int]history.ClientKillStart
	meta       *history.Meta
	clients    int // under per-client numbering, the client count; else 0
	started    bool
	start, end int64
	maxLeaseMS int64
	// active counts the fault windows open by kind (start and stop lines).
	active map[string]int
}

func newLiveness(cfg config) *liveness {
	return &liveness{cfg: cfg, locks: map[string]*liveLock{}, calls: map[int]liveCall{}, held: map[int][]*liveLock{},
		latest: map[int]int{}, killed: map[int]history.ClientKillStart{}, active: map[string]int{}}
}

func (v *liveness) lock(name string, t int64) *liveLock {
	if name == v.lastName && v.lastLock != nil {
		return v.lastLock
	}
	l := v.locks[name]
	if l == nil {
		l = &liveLock{name: name, freeSince: v.start, acq: int64(v.acq), askFrom: -1, minExp: Never}
		if !v.started {
			l.freeSince = t
		}
		v.locks[name] = l
		v.order = append(v.order, name)
	}
	v.lastName, v.lastLock = name, l
	return l
}

// isLockF are the operations liveness follows.
func isLiveF(f string) bool {
	switch f {
	case history.FAcquire, history.FRenew, history.FRelease, history.FAdd:
		return true
	}
	return false
}

func (v *liveness) feed(op history.Op) {
	if op.Process < 0 {
		switch {
		case op.F == history.FMeta:
			var m history.Meta
			if jsonUnmarshal(op.Value, &m) == nil {
				v.meta = &m
				if m.Config[history.ConfigProcesses] == history.ProcessesPerClient {
					v.clients = m.Clients()
				}
			}
		case op.F == history.StartF(history.KindClientKill):
			var k history.ClientKillStart
			if jsonUnmarshal(op.Value, &k) == nil {
				v.killed[k.Process] = k
				v.die(k.Process, &op, CauseKilled, op.Time)
			}
		}
		if kind, start, ok := history.FaultEvent(op.F); ok {
			v.fault(kind, start)
		}
		return
	}
	if !isLiveF(op.F) || op.Lock == "" && op.Type == history.Invoke {
		return
	}
	if !v.started {
		v.started, v.start = true, op.Time
		v.acq = v.cfg.acquireTimeout
		if v.acq <= 0 {
			v.acq = configDuration(v.meta, ConfigAcquireTimeout, DefaultAcquireTimeout)
		}
	}
	v.end = op.Time
	v.replaced(op)
	if op.Type == history.Invoke {
		l := v.lock(op.Lock, op.Time)
		v.calls[op.Process] = liveCall{f: op.F, l: l, invT: op.Time}
		if op.F == history.FAcquire {
			l.expire(op.Time)
			if l.left != nil {
				l.asked++
			}
			l.asking++
			if len(l.holders) == 0 && l.askFrom < 0 {
				l.askFrom = op.Time
			}
		}
		return
	}
	c, ok := v.calls[op.Process]
	if !ok {
		return // a completion without its invocation: validation's business
	}
	delete(v.calls, op.Process)
	l := c.l
	if l == nil {
		if op.Lock == "" {
			return
		}
		l = v.lock(op.Lock, op.Time)
	}
	l.expire(op.Time)
	if c.f == history.FAcquire {
		l.asking--
	}
	switch {
	case op.Type == history.OK && (c.f == history.FAcquire || c.f == history.FRenew):
		exp := expiry(c.invT, op.LeaseMS)
		if c.f == history.FRenew && op.LeaseMS == 0 {
			if h, ok := l.holders.get(op.Process); ok {
				exp = h.expiry // a renew without lease_ms keeps the grant's lease
			}
		}
		v.maxLeaseMS = max(v.maxLeaseMS, op.LeaseMS)
		if c.f == history.FAcquire {
			l.grant(op)
		}
		if again := l.holders.set(liveHold{proc: op.Process, expiry: exp, grant: op}); !again {
			v.held[op.Process] = append(v.held[op.Process], l)
		}
		l.minExp = min(l.minExp, exp)
	case op.Type == history.OK && c.f == history.FRelease, op.Type == history.Fail && (c.f == history.FRelease || c.f == history.FRenew):
		// Released, or not held any more: the hold ended either way.
		_, held := l.holders.get(op.Process)
		v.unhold(l, op.Process, op.Time)
		if held && op.Type == history.OK && len(l.holders) == 0 {
			rel := op
			l.lastRelease = &rel
		}
	case op.Type == history.Fail && c.f == history.FAcquire:
		if l.refuse(op, c.invT) {
			for k, n := range v.active {
				if n > 0 {
					l.refused.noteFault(k)
				}
			}
		}
	case op.Type == history.Info:
		cause := CauseWriteUnknown
		switch c.f {
		case history.FAcquire:
			cause = CauseAcquireUnknown
		case history.FRelease:
			cause = CauseReleaseUnknown
		case history.FRenew:
			cause = CauseRenewUnknown
		}
		if _, was := v.killed[op.Process]; was {
			cause = CauseKilled
		}
		// The operation's own lock: an acquire that may have taken
		// effect, or a release that may not have, leaves it held even when
		// this process was not (or no longer) its live holder.
		if c.f == history.FAcquire || c.f == history.FRelease {
			if _, holds := l.holders.get(op.Process); !holds {
				l.leave(leftHeld{t: op.Time, proc: op.Process, cause: cause, op: op, rank: 1})
			}
		}
		v.die(op.Process, &op, cause, op.Time)
	}
}

func (v *liveness) unhold(l *liveLock, p int, t int64) {
	l.release(p, t)
	if s, ok := v.held[p]; ok {
		if s = slices.DeleteFunc(s, func(x *liveLock) bool { return x == l }); len(s) == 0 {
			delete(v.held, p)
		} else {
			v.held[p] = s
		}
	}
}

// die ends every live hold of process p at t: p's process is gone (an
// unknown outcome retired it, or it was killed), so whatever it held stays
// held until a lease frees it or the recipe recovers.
// op is what ended it; nil: the hold's grant is the last word of it.
func (v *liveness) die(p int, op *history.Op, cause string, t int64) {
	for _, l := range v.held[p] {
		l.expire(t)
		h, ok := l.holders.get(p)
		if !ok {
			continue
		}
		l.release(p, t)
		if h.expiry > t {
			last := h.grant
			if op != nil {
				last = *op
			}
			l.leave(leftHeld{t: t, proc: p, cause: cause, op: last, rank: 2})
		}
	}
	delete(v.held, p)
}

// replaced ends the holds of the earlier processes of op's client: under
// per-client numbering, a new process of a client means the old one is
// gone, whether or not the history said why.
func (v *liveness) replaced(op history.Op) {
	if v.clients <= 0 || op.Process < 0 {
		return
	}
	c := op.Process % v.clients
	prev, seen := v.latest[c]
	if seen && prev == op.Process {
		return
	}
	v.latest[c] = max(prev, op.Process)
	if seen && prev < op.Process && len(v.held[prev]) > 0 {
		v.die(prev, nil, CauseReplaced, op.Time)
	}
}

// expire ends the leased holds whose lease ran out by t.
func (l *liveLock) expire(t int64) {
	if t < l.minExp {
		return
	}
	l.minExp = Never
	for _, h := range slices.Clone(l.holders) {
		if h.expiry <= t {
			l.release(h.proc, h.expiry)
		} else {
			l.minExp = min(l.minExp, h.expiry)
		}
	}
}

// fault notes a fault window's start or stop; a fault that starts during
// an open refused period is named by it.
func (v *liveness) fault(kind string, start bool) {
	if !start {
		if v.active[kind] > 0 {
			v.active[kind]--
		}
		return
	}
	v.active[kind]++
	for _, l := range v.locks {
		if l.refused != nil {
			l.refused.noteFault(kind)
		}
	}
}

func (r *refusedRun) noteFault(kind string) {
	if !slices.Contains(r.faults, kind) {
		r.faults = append(r.faults, kind)
		slices.Sort(r.faults)
	}
}

// refuse notes an acquire answered fail, invoked at invT: when the lock was
// free by the history since a release, with nothing since that may have
// left it held, and the acquire asked after the release, a refused period
// opens (or goes on). It says whether one opened.
func (l *liveLock) refuse(op history.Op, invT int64) bool {
	if len(l.holders) > 0 || l.left != nil || l.lastRelease == nil || invT < l.lastRelease.Time {
		return false
	}
	if l.refused != nil {
		l.refused.fails++
		return false
	}
	start := l.freeSince
	if l.askFrom > start {
		start = l.askFrom
	}
	l.refused = &refusedRun{start: start, release: *l.lastRelease, first: op, firstAt: invT, fails: 1}
	return true
}

// release ends p's hold at t.
func (l *liveLock) release(p int, t int64) {
	if !l.holders.drop(p) {
		return
	}
	l.lastRelease = nil // a release sets it again once the hold is gone
	if len(l.holders) == 0 {
		l.freeSince = t
		l.askFrom = -1
		if l.asking > 0 {
			l.askFrom = t // a waiter was asking as it became free
		}
		if l.left != nil && l.leftFree < 0 {
			l.leftFree = t
		}
	}
}

// leave notes an event that may have left l held.
func (l *liveLock) leave(e leftHeld) {
	l.refused = nil // the event explains what follows better
	if l.left == nil {
		l.leftFree = -1
		if len(l.holders) == 0 {
			l.leftFree = e.t
		}
		l.asked = 0
		l.left = &e
		return
	}
	if e.rank > l.left.rank {
		l.left = &e
	}
}

// grant is an ok acquire: the lock could be had. The free time before it
// beyond the acquire time-out was unavailable: a moment t of it is
// available only when a grant came by t plus the time-out.
func (l *liveLock) grant(op history.Op) {
	l.grants++
	if len(l.holders) == 0 {
		l.unavailable += l.unavailableTo(op.Time)
	}
	if l.left != nil {
		l.period(op.Time, true, &op)
	}
	l.closeRefused(op.Time, true, &op)
}

// closeRefused ends the open refused period at t.
func (l *liveLock) closeRefused(t int64, freed bool, by *history.Op) {
	r := l.refused
	if r == nil {
		return
	}
	l.refused = nil
	p := StuckPeriod{Lock: l.name, Start: r.start, End: t, Freed: freed, Cause: CauseRefused, Process: r.release.Process, Client: -1,
		Asked: r.fails, Ops: []history.Op{r.release, r.first}, Faults: r.faults}
	if by != nil {
		p.Ops = append(p.Ops, *by)
	}
	l.periods = append(l.periods, p)
}

// unavailableTo is the free time from the first ask since the lock became
// free to t beyond the acquire time-out: a moment counts when someone was
// asking by then and no grant came within the time-out.
func (l *liveLock) unavailableTo(t int64) int64 {
	if l.askFrom < 0 {
		return 0
	}
	return max(0, t-max(l.freeSince, l.askFrom)-l.acq)
}

// period closes the open left-held event as a period ending at t, judged
// against the bound at finish.
func (l *liveLock) period(t int64, freed bool, by *history.Op) {
	e := l.left
	l.left = nil
	if l.leftFree < 0 {
		return // a live holder held it throughout: nothing was left held
	}
	start := l.leftFree
	p := StuckPeriod{Lock: l.name, Start: start, End: t, Freed: freed, Cause: e.cause, Process: e.proc, Client: -1, Asked: l.asked,
		Ops: []history.Op{e.op}}
	if by != nil {
		p.Ops = append(p.Ops, *by)
	}
	l.periods = append(l.periods, p)
}

// finish judges the periods against the bound and counts availability.
func (v *liveness) finish() *Liveness {
	if !v.started {
		return nil
	}
	acq := v.acq
	bound := v.cfg.stuckBound
	if bound <= 0 {
		ttl := configDuration(v.meta, "ttl", 0)
		ttl = max(ttl, time.Duration(v.maxLeaseMS)*time.Millisecond)
		bound = configDuration(v.meta, ConfigStuckBound, DefaultStuckBound(ttl, acq))
	}
	out := &Liveness{AcquireTimeoutMS: acq.Milliseconds(), StuckBoundMS: bound.Milliseconds(), Start: v.start, End: v.end}
	span := v.end - v.start
	names := append([]string(nil), v.order...)
	sort.Strings(names)
	for _, name := range names {
		l := v.locks[name]
		l.expire(v.end)
		if l.left != nil {
			l.period(v.end, false, nil)
		}
		l.closeRefused(v.end, false, nil)
		unavail := l.unavailable
		if len(l.holders) == 0 {
			unavail += l.unavailableTo(v.end)
		}
		ll := LockLiveness{Lock: name, Grants: l.grants, UnavailableMS: unavail / 1e6, Availability: 1}
		if span > 0 {
			ll.Availability = 1 - float64(min(unavail, span))/float64(span)
		}
		for _, p := range l.periods {
			if p.End-p.Start <= int64(bound) {
				continue
			}
			if c, ok := v.meta.ClientOf(p.Process); ok {
				p.Client = c
			}
			p.Message = p.describe(v.meta)
			ll.Stuck = append(ll.Stuck, p)
		}
		out.Locks = append(out.Locks, ll)
	}
	return out
}

// configDuration reads a duration from the meta line's config.
func configDuration(m *history.Meta, key string, def time.Duration) time.Duration {
	if m == nil {
		return def
	}
	d, err := time.ParseDuration(m.Config[key])
	if err != nil || d < 0 {
		return def
	}
	return d
}

// causeWords says what left the lock held.
var causeWords = map[string]string{
	CauseWriteUnknown:   "its holder's write came back unknown, so the holder's process was retired with the grant",
	CauseRenewUnknown:   "its holder's renew came back unknown, so the holder's process was retired with the grant",
	CauseAcquireUnknown: "an acquire was answered unknown and may have taken effect, its process retired",
	CauseReleaseUnknown: "a release was answered unknown and may not have taken effect, its process retired",
	CauseKilled:         "its holder's process was killed (client-kill)",
	CauseReplaced:       "its holder's process was replaced by a new process of its client",
}

// describe is the period in a sentence.
func (s StuckPeriod) describe(m *history.Meta) string {
	who := "process " + strconv.Itoa(s.Process)
	if s.Client >= 0 {
		who += fmt.Sprintf(" (client %d)", s.Client)
	}
	end := fmt.Sprintf("held to the end of the clients' run (%s)", fmtDur(s.End-s.Start))
	if s.Freed {
		end = fmt.Sprintf("freed at %s, %s later, by the next grant", fmtTime(s.End), fmtDur(s.End-s.Start))
	}
	if s.Cause == CauseRefused && len(s.Ops) >= 2 {
		acq := s.Ops[1]
		by := "process " + strconv.Itoa(acq.Process)
		if c, ok := m.ClientOf(acq.Process); ok {
			by += fmt.Sprintf(" (client %d)", c)
		}
		or := "either that release did not take effect or an acquire answered fail did"
		if len(s.Faults) > 0 {
			or = fmt.Sprintf("the faults in effect meanwhile (%s) kept every acquire out, or that release did not take "+
				"effect, or an acquire answered fail did", strings.Join(s.Faults, ", "))
		}
		return fmt.Sprintf("lock %q stuck from %s: free by the history since the release of %s, answered ok at %s, yet "+
			"every acquire asked since was refused: %s (the first refused after it: the acquire of %s, answered fail at "+
			"%s); %s; %s refused meanwhile",
			s.Lock, fmtTime(s.Start), who, fmtTime(s.Ops[0].Time), or, by, fmtTime(acq.Time), end,
			plural(s.Asked, "1 acquire", "%d acquires"))
	}
	what := causeWords[s.Cause]
	if what == "" {
		what = s.Cause
	}
	if op := s.Ops[0]; op.Process >= 0 {
		who += " (its " + op.F + ")"
	}
	return fmt.Sprintf("lock %q stuck from %s: %s, left it held by %s; %s; %s asked for it meanwhile",
		s.Lock, fmtTime(s.Start), what, who, end, plural(s.Asked, "1 acquire", "%d acquires"))
}

// StuckAtEnd are the periods that lasted to the end of the clients' run.
func (v *Liveness) StuckAtEnd() []StuckPeriod {
	if v == nil {
		return nil
	}
	var out []StuckPeriod
	for _, l := range v.Locks {
		for _, p := range l.Stuck {
			if !p.Freed {
				out = append(out, p)
			}
		}
	}
	return out
}

// AllStuck are every lock's stuck periods, by start.
func (v *Liveness) AllStuck() []StuckPeriod {
	if v == nil {
		return nil
	}
	var out []StuckPeriod
	for _, l := range v.Locks {
		out = append(out, l.Stuck...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// Availability is the mean availability over the locks, weighted alike (1
// when nothing was measured).
func (v *Liveness) Availability() float64 {
	if v == nil || len(v.Locks) == 0 {
		return 1
	}
	var sum float64
	for _, l := range v.Locks {
		sum += l.Availability
	}
	return sum / float64(len(v.Locks))
}

// Summary is the liveness in a line, as `lockcheck check` prints it.
func (v *Liveness) Summary() string {
	if v == nil {
		return "liveness: no lock operations"
	}
	stuck := v.AllStuck()
	s := fmt.Sprintf("liveness: availability %.1f%% (acquire time-out %s, stuck bound %s)", 100*v.Availability(),
		time.Duration(v.AcquireTimeoutMS)*time.Millisecond, time.Duration(v.StuckBoundMS)*time.Millisecond)
	if len(stuck) == 0 {
		return s + ", no lock stuck"
	}
	return s + ", " + plural(len(stuck), "1 stuck period", "%d stuck periods")
}
