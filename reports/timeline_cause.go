package reports

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// The causes a report states are derived from the run's timeline, not only
// from which fault windows were open: an overlap that began before the
// first holder's own deadline was the server letting the lease go early
// (whatever the clients did), a lost add was overwritten by a write that
// read before it and wrote after it. Where the timeline supports no
// mechanism the report says "no fault explains this" plainly.

// noFault is the sentence for an anomaly no fault explains.
const noFault = "no fault explains this"

// causeTimeline is what the causes read beyond the anomaly itself: the
// history's operations, in order, and the grants and leases the checker
// derived from them while it judged the history (checker.Timeline). Every
// grant, deadline and release a cause names is the checker's, not a model
// of the report's own.
type causeTimeline struct {
	ops []history.Op
	// meta ties processes to clients (history.Meta.ClientOf); nil when
	// the history has no meta line.
	meta *history.Meta
	// grants are the checker's grants and leases of each lock.
	grants *checker.Timeline
}

// newCauseTimeline is the timeline of ops, with the grants the checker
// derived from them (nil: derived now).
func newCauseTimeline(ops []history.Op, meta *history.Meta, grants *checker.Timeline) *causeTimeline {
	if grants == nil {
		grants = checker.TimelineOf(ops)
	}
	return &causeTimeline{ops: ops, meta: meta, grants: grants}
}

// lock is the checker's timeline of one lock, nil when there is none.
func (tl *causeTimeline) lock(name string) *checker.LockTimeline {
	if tl == nil {
		return nil
	}
	return tl.grants.Lock(name)
}

// before is the timeline's operations before line index (the history is
// in index order).
func (tl *causeTimeline) before(index int64) []history.Op {
	at, _ := slices.BinarySearchFunc(tl.ops, index, func(op history.Op, i int64) int { return cmp.Compare(op.Index, i) })
	return tl.ops[:at]
}

// clientOf is process p's client, and whether the history says.
func (tl *causeTimeline) clientOf(p int) (int, bool) {
	if tl == nil {
		return 0, false
	}
	return tl.meta.ClientOf(p)
}

// pinnedTo is the clients pinned to the coordinator a window aims at
// (coord-partition, coord-clock).
func pinnedTo(w faultView) ([]int, bool) {
	switch w.Kind {
	case history.KindCoordPartition:
		v, ok := decode[history.CoordPartitionStart](w.Value)
		return v.Clients, ok
	case history.KindCoordClock:
		v, ok := decode[history.CoordClockStart](w.Value)
		return v.Clients, ok
	case history.KindCoordSlowNode:
		v, ok := decode[history.CoordSlowNodeStart](w.Value)
		return v.Clients, ok
	case history.KindCoordGCStall:
		v, ok := decode[history.GCStallStart](w.Value)
		return v.Clients, ok
	}
	return nil, false
}

// aimedElsewhere says whether a window aimed at one coordinator (coord-
// partition, coord-clock: its clients pinned there) served none of the
// anomaly's processes: all are known to be clients pinned elsewhere. Its
// mechanism acts through that coordinator's requests, so the timeline does
// not support it as this anomaly's cause. A process whose client the
// history does not say leaves the window possible, as does a window not
// aimed at a coordinator.
func (tl *causeTimeline) aimedElsewhere(w faultView, processes ...int) bool {
	aimed, ok := pinnedTo(w)
	if !ok || len(processes) == 0 {
		return false
	}
	for _, p := range processes {
		c, known := tl.clientOf(p)
		if !known || slices.Contains(aimed, c) {
			return false
		}
	}
	return true
}

// grantOf is a lease the checker counted with a deadline: an ok acquire
// or renew that began a grant or extended it.
type grantOf struct{ checker.Lease }

func (g grantOf) deadline() int64 { return g.Deadline }

// leaseMS is the lease it counts from its invocation, as the checker
// counted it (an ok renew without lease_ms renews for its grant's lease).
func (g grantOf) leaseMS() int64 { return (g.Deadline - g.Invoke.Time) / 1e6 }

// lastGrant is process p's grant that set its hold's end among the ops an
// anomaly shows on lock: the last of its ok acquires and renews there that
// the checker counted with a lease.
func (tl *causeTimeline) lastGrant(lock string, ops []history.Op, p int) (grantOf, bool) {
	lt := tl.lock(lock)
	for i := len(ops) - 1; i >= 0 && lt != nil; i-- {
		op := ops[i]
		if op.Process != p || op.Type != history.OK || (op.F != history.FAcquire && op.F != history.FRenew) {
			continue
		}
		if g, ok := lt.LeaseAt(op.Index); ok && g.Deadline != checker.Never {
			return grantOf{g}, true
		}
	}
	return grantOf{}, false
}

// inForce is the lease in force at the time by of the grant of process p
// that an anomaly shows on lock: of the leases the checker counted for
// that grant (a heartbeat the anomaly's operations leave out among them),
// the last answered by then, if it has a deadline. A heartbeat answered
// later extended a hold the lock may already have let go.
func (tl *causeTimeline) inForce(lock string, ops []history.Op, p int, by int64) (grantOf, bool) {
	lt := tl.lock(lock)
	for i := len(ops) - 1; i >= 0 && lt != nil; i-- {
		op := ops[i]
		if op.Process != p || op.Type != history.OK || (op.F != history.FAcquire && op.F != history.FRenew) {
			continue
		}
		l, ok := lt.LeaseAt(op.Index)
		if !ok {
			continue
		}
		leases := lt.Grants[l.Grant].Leases
		for j := len(leases) - 1; j >= 0; j-- {
			if g := lt.Leases[leases[j]]; g.OK.Time <= by {
				return grantOf{g}, g.Deadline != checker.Never
			}
		}
		return grantOf{}, false
	}
	return grantOf{}, false
}

// grantBefore is process p's last lease on lock with a deadline that the
// checker counted before line index.
func (tl *causeTimeline) grantBefore(lock string, p int, index int64) (grantOf, bool) {
	before := tl.lock(lock).Before(index)
	for i := len(before) - 1; i >= 0; i-- {
		if g := before[i]; g.Process == p && g.Deadline != checker.Never {
			return grantOf{g}, true
		}
	}
	return grantOf{}, false
}

// leftHold is an overlap whose first holder was left by an unknown
// outcome before the second was granted: the client went on under another
// process, and the first's hold stood as it was.
type leftHold struct {
	first, second int
	unknown       history.Op // the first's unknown outcome
	leased        bool       // the first's grant has a lease, so its hold ends
}

// leftHoldOf finds the first holder's grant in the checker's timeline
// that its process left (checker.Grant.Lost) before the second's began.
func leftHoldOf(a checker.Anomaly, tl *causeTimeline) (leftHold, bool) {
	if a.Kind != checker.KindOverlap || len(a.Processes) < 2 || tl == nil {
		return leftHold{}, false
	}
	h := leftHold{first: a.Processes[0], second: a.Processes[1]}
	lt := tl.lock(a.Lock)
	if lt == nil {
		return leftHold{}, false
	}
	for _, g := range lt.Grants {
		if g.Process == h.first && g.Lost != nil && g.Lost.Time <= a.Start {
			h.unknown, h.leased = *g.Lost, g.Deadline != checker.Never
		}
	}
	if h.unknown.F == "" {
		return leftHold{}, false
	}
	return h, true
}

// abandonedHold explains a left hold whose grant had no lease: nothing in
// the history ends it, so every later grant overlaps it, whoever gets it.
// For a fenced lock that is a finding, not a failure.
func abandonedHold(a checker.Anomaly, tl *causeTimeline) (string, bool) {
	h, ok := leftHoldOf(a, tl)
	if !ok || h.leased {
		return "", false
	}
	return fmt.Sprintf("an abandoned hold: process %d's %s had an unknown outcome at %s while it held a grant with no lease, so nothing "+
		"in the history ends its hold and every later grant overlaps it (process %d's here); a lock that fences its resource "+
		"refuses the abandoned process's late writes by token, which the resource checks judge", h.first, h.unknown.F, secs(h.unknown.Time), h.second), true
}

// sameClient explains a left hold with a lease whose successor is the same
// client's later process, granted before that lease ended. A lock that
// names its holder by something the client keeps (a host id, an instance
// name) grants a restarted client what its predecessor held: one owner to
// the lock, two processes to the history, and the predecessor's operation
// may still land.
func sameClient(a checker.Anomaly, tl *causeTimeline) (string, bool) {
	h, ok := leftHoldOf(a, tl)
	if !ok || !h.leased {
		return "", false
	}
	c1, ok1 := tl.clientOf(h.first)
	c2, ok2 := tl.clientOf(h.second)
	if !ok1 || !ok2 || c1 != c2 {
		return "", false
	}
	later := fmt.Sprintf("a later process of client %d than process %d", c1, h.first)
	if h.second-h.first == tl.meta.Clients() {
		later = fmt.Sprintf("client %d's replacement for process %d", c1, h.first)
	}
	return fmt.Sprintf("one client's two processes: process %d is %s, whose %s had an unknown outcome at %s, so its hold counts until "+
		"its lease ends. If the lock names its holder by what a restarted client keeps (a host id, an instance name), it granted the "+
		"client its own lease again, and the earlier process's operation in flight may still land in the later one's hold",
		h.second, later, h.unknown.F, secs(h.unknown.Time)), true
}

// earlyExpiry explains an overlap that began before the first holder's own
// deadline: the server let its lease go first. The mechanism is the fault
// on the server's side in effect then (a skewed or cut coordinator, a node
// clock, a power loss), a failed heartbeat if the holder had one, or none.
func earlyExpiry(a checker.Anomaly, faults []faultView, tl *causeTimeline) (string, bool) {
	if a.Kind != checker.KindOverlap || len(a.Processes) < 2 {
		return "", false
	}
	first, second := a.Processes[0], a.Processes[1]
	// The lease in force when the second was granted: a heartbeat
	// answered after that extended a hold the lock had already let go.
	g, ok := tl.inForce(a.Lock, a.Ops, first, a.Start)
	if !ok || a.Start >= g.deadline() {
		return "", false
	}
	s := fmt.Sprintf("the lock let process %d's lease go before its own deadline: process %d was granted the lock at %s, "+
		"%.1f s before process %d's deadline (%s: its %s invoked at %s plus its %d ms lease)",
		first, second, secs(a.Start), float64(g.deadline()-a.Start)/1e9, first, secs(g.deadline()), g.OK.F, secs(g.Invoke.Time), g.leaseMS())
	var why []string
	for _, w := range faults {
		lasting := slices.ContainsFunc(causeRules, func(r causeRule) bool { return r.fault == w.Kind && r.lasting })
		if w.Start > a.Start || (effectEnd(w) < g.Invoke.Time && !lasting) {
			continue
		}
		if tl.aimedElsewhere(w, first, second) {
			continue
		}
		if w.Kind == history.KindClientClock {
			if m := clientExpiry(w, a.Start, tl, first, second); m != "" && !slices.Contains(why, m) {
				why = append(why, m)
			}
			continue
		}
		if m := serverMechanism(w, a.Start); m != "" && !slices.Contains(why, m) {
			why = append(why, m)
		}
		// A coordinator slowed while the first holder renewed through it:
		// open at some time of the lease it counted.
		if w.End >= g.Invoke.Time-g.leaseMS()*1e6 {
			if m := slowCoordinator(w, first, tl); m != "" && !slices.Contains(why, m) {
				why = append(why, m)
			}
		}
	}
	if hb := failedHeartbeat(tl, first, g, a.End); hb != "" {
		why = append(why, hb)
	}
	if len(why) == 0 {
		return s + "; " + noFault + ": no fault that moves the server's clock or hides its writes acted on these processes' requests (a lease the client " +
			"counts with no margin against the server's expiry, which Cassandra keeps in whole seconds, ends on the server first)", true
	}
	return s + "; " + strings.Join(why, "; "), true
}

// effectEnd is when a window stops acting on the server: its end, except
// for coord-clock, whose node hands out timestamps from its forward clock
// until real time catches up with the last one (Cassandra keeps them
// monotonic), up to the offset after the reset.
func effectEnd(w faultView) int64 {
	if w.Kind == history.KindCoordClock {
		if v, ok := decode[history.CoordClockStart](w.Value); ok {
			if d, ok := offsetOf(v.Offset); ok && d > 0 {
				return w.End + d.Nanoseconds()
			}
		}
	}
	return w.End
}

// serverMechanism is how a fault window makes the server expire a lease
// early, at an anomaly starting at at, in words, or "" when its kind does
// not.
func serverMechanism(w faultView, at int64) string {
	switch w.Kind {
	case history.KindCoordClock:
		if v, ok := decode[history.CoordClockStart](w.Value); ok && v.Node != "" {
			s := fmt.Sprintf("skewed coordinator: node %s, the coordinator of %s, ran %s ahead (coord-clock, %s – %s)",
				v.Node, clientList(v.Clients), secondsText(v.Offset), secs(w.Start), secs(w.End))
			if at > w.End && at <= effectEnd(w) {
				s += fmt.Sprintf(", %.1f s before this grant; its Paxos timestamps stay ahead after the reset until real time "+
					"catches up with them (Cassandra keeps them monotonic), so it still acts ahead", float64(at-w.End)/1e9)
			}
			return s
		}
	case history.KindClock:
		if v, ok := decode[history.ClockStart](w.Value); ok && len(v.Offsets) > 0 {
			var parts []string
			for n, o := range v.Offsets {
				parts = append(parts, n+" "+o)
			}
			slices.Sort(parts)
			return fmt.Sprintf("skewed node clocks (clock, %s – %s: %s): a coordinator running ahead expires the TTL early",
				secs(w.Start), secs(w.End), strings.Join(parts, ", "))
		}
	case history.KindCoordPartition:
		if v, ok := decode[history.CoordPartitionStart](w.Value); ok && v.Node != "" {
			return fmt.Sprintf("cut coordinator: node %s, the coordinator of %s, could not reach the other nodes (coord-partition, %s – %s), "+
				"so a read through the others did not see the lock row written through it", v.Node, clientList(v.Clients), secs(w.Start), secs(w.End))
		}
	case history.KindPowerLoss, history.KindRackPowerLoss:
		if v, ok := decode[history.PowerStart](w.Value); ok {
			var nodes []string
			for n := range v.UnsyncedBytes {
				nodes = append(nodes, n)
			}
			slices.Sort(nodes)
			return fmt.Sprintf("lost power tail: %s lost power at %s (%s) with unsynced writes, the lock row among them", strings.Join(nodes, ", "), secs(w.Start), w.Kind)
		}
	}
	return ""
}

// failedHeartbeat names process p's heartbeat (a renew, or a leader's
// re-acquire) of its grant g, on g's lock, that failed before until: the
// server had already let the lease go. A heartbeat is made while holding:
// it was invoked before the checker ended g's hold (its release, its
// lease running out), and an acquire after that is a new request, no
// heartbeat.
func failedHeartbeat(tl *causeTimeline, p int, g grantOf, until int64) string {
	lt := tl.lock(g.Invoke.Lock)
	if lt == nil {
		return ""
	}
	end := lt.Grants[g.Grant].End
	var inv history.Op // p's latest invocation: a completion's lock is its invocation's
	for _, op := range tl.ops {
		if op.Process != p {
			continue
		}
		if op.Type == history.Invoke {
			inv = op
		}
		if op.Time <= g.OK.Time {
			continue
		}
		if until != checker.Never && op.Time > until+g.leaseMS()*1e6 || op.Type == history.Invoke && op.F == history.FRelease && op.Lock == g.Invoke.Lock {
			break // not after the release
		}
		if (op.F == history.FRenew || op.F == history.FAcquire) && (op.Type == history.Fail || op.Type == history.Info) &&
			inv.Lock == g.Invoke.Lock && inv.Time < end {
			return fmt.Sprintf("failed heartbeat: process %d's %s at %s came back %s (%s): by then the server no longer held its lease",
				p, op.F, secs(op.Time), op.Type, strings.TrimSpace(op.Error))
		}
	}
	return ""
}

// overwriter is the add that overwrote a lost add: by another process, on
// the same lock, invoked before the lost add was acknowledged (it read the
// set without it) and completed after (it wrote that set back). One whose
// element the later read holds is preferred, the earliest such first; kept
// says whether it is such a one.
func overwriter(a checker.Anomaly, tl *causeTimeline) (ops []history.Op, kept, ok bool) {
	if tl == nil || a.Kind != checker.KindLostAdd || len(a.Processes) == 0 {
		return nil, false, false
	}
	lostP := a.Processes[0]
	var lostInv, lostRet *history.Op
	for i := range a.Ops {
		op := &a.Ops[i]
		if op.F != history.FAdd || op.Process != lostP {
			continue
		}
		if op.Type == history.Invoke {
			lostInv = op
		} else {
			lostRet = op
		}
	}
	if lostInv == nil || lostRet == nil {
		return nil, false, false
	}
	var final []int64
	for _, op := range a.Ops {
		if op.F == history.FRead && op.Type == history.OK {
			final = nil
			_ = jsonInts(op.Value, &final)
		}
	}
	type cand struct {
		inv, ret history.Op
		kept     bool
	}
	var best *cand
	invs := map[int]history.Op{}
	for _, op := range tl.ops {
		if op.F != history.FAdd || op.Lock != a.Lock || op.Process == lostP || op.Process == history.NemesisProcess {
			continue
		}
		if op.Type == history.Invoke {
			invs[op.Process] = op
			continue
		}
		inv, ok := invs[op.Process]
		delete(invs, op.Process)
		if !ok || op.Type == history.Fail || inv.Time >= lostRet.Time || op.Time <= lostRet.Time {
			continue
		}
		var elem int64
		kept := jsonInts(op.Value, &elem) == nil && slices.Contains(final, elem)
		if best == nil || (kept && !best.kept) {
			best = &cand{inv, op, kept}
		}
	}
	if best == nil {
		return nil, false, false
	}
	return []history.Op{best.inv, best.ret}, best.kept, true
}

// overwrittenBy opens the sentence naming a lost add's overwriter: a cause
// that starts with it names one, and the page then shows its operations.
const overwrittenBy = "overwritten by"

// lostAddCause names the write that overwrote a lost add, and why it was
// stale where the timeline says (its process stalled: client-pause).
// certain is false when the overwriter's own element is missing from the
// later read too: then the timeline does not show that its write is the
// one that stood (a power loss that undid both explains them better).
func lostAddCause(a checker.Anomaly, faults []faultView, tl *causeTimeline) (s string, certain, ok bool) {
	w, kept, ok := overwriter(a, tl)
	if !ok {
		return "", false, false
	}
	inv, ret := w[0], w[1]
	s = fmt.Sprintf(overwrittenBy+" process %d's add of %s (invoked at %s, before this add was acknowledged, and %s at %s, after it): "+
		"its read-modify-write read the set without this element and wrote it back", inv.Process, string(ret.Value), secs(inv.Time), ret.Type, secs(ret.Time))
	for _, f := range faults {
		if f.Kind != history.KindClientPause || f.Start > ret.Time || f.End < inv.Time {
			continue
		}
		if v, ok := decode[history.ClientPauseStart](f.Value, "process"); ok && v.Process == inv.Process {
			s += fmt.Sprintf("; stalled holder: process %d stood still %.1f s (client-pause, %s – %s) between that read and that write, past its lease",
				v.Process, float64(f.End-f.Start)/1e9, secs(f.Start), secs(f.End))
		}
	}
	return s, kept, true
}

// lateWrite explains a stale write sent inside its holder's lease and
// acknowledged after it ran out, once another process held the lock: no
// client stalled and no server let a lease go early; a request outlived
// the lease it was sent under, and the resource had no token to refuse it.
// The windows open while it was in flight are named as what slowed it.
func lateWrite(a checker.Anomaly, faults []faultView, tl *causeTimeline) (string, bool) {
	if a.Kind != checker.KindStaleWrite || len(a.Processes) < 2 {
		return "", false
	}
	p, q := a.Processes[0], a.Processes[1]
	inv, ret, ok := addOf(a.Ops, p)
	if !ok {
		return "", false
	}
	g, ok := tl.lastGrant(a.Lock, a.Ops[:slices.IndexFunc(a.Ops, func(op history.Op) bool { return op.Index >= inv.Index })], p)
	if !ok || inv.Time >= g.deadline() || ret.Time <= g.deadline() {
		return "", false
	}
	// The other's grant must come after this holder's: the late write
	// lands in a term that began after the one it was sent in.
	other, ok := tl.lastGrant(a.Lock, a.Ops, q)
	if !ok || other.OK.Time <= g.OK.Time || other.OK.Time >= ret.Time {
		return "", false
	}
	slow := slowedBy(faults, "add", inv.Time, ret.Time)
	if slow != "" {
		// A delay on a node's links holds back its answers as well as
		// its copies to the replicas: the write may have reached a quorum
		// before the next grant, only its acknowledgement after (the
		// timeline cannot tell which), so the cause says what it shows.
		return fmt.Sprintf("a write outlived its lease: %s, inside process %d's lease (to %s), and was acknowledged after the "+
			"next grant (process %d's, at %s), at %s, %s past the lease: the delay holds back the answers as well as the "+
			"copies to the replicas, so the write may have reached a quorum before that grant, but its holder learned it had "+
			"written only in another's term; the lock hands the resource no token to refuse a late write",
			slow, p, secs(g.deadline()), q, secs(other.OK.Time), secs(ret.Time), span(ret.Time-g.deadline())) +
			inFlight(faults, inv, ret, p, tl), true
	}
	slow = heldBy(faults, "add", inv.Time, ret.Time, p, tl)
	if slow != "" {
		// The slowness is the cause: say it first, with the link.
		return fmt.Sprintf("a write outlived its lease: %s, inside process %d's lease (to %s), and applied after the next grant "+
			"(process %d's, at %s): it was acknowledged at %s, %s past the lease; the lock hands the resource no token to refuse "+
			"a late write", slow, p, secs(g.deadline()), q, secs(other.OK.Time), secs(ret.Time), span(ret.Time-g.deadline())) +
			inFlight(faults, inv, ret, p, tl), true
	}
	return fmt.Sprintf("a write outlived its lease: process %d's add was invoked at %s, inside its lease (to %s), and acknowledged at %s, "+
		"%s past it and after process %d was granted the lock at %s; the lock hands the resource no token to refuse a late write, "+
		"so a write in flight when the lease runs out lands in the next holder's term",
		p, secs(inv.Time), secs(g.deadline()), secs(ret.Time), span(ret.Time-g.deadline()), q, secs(other.OK.Time)) +
		inFlight(faults, inv, ret, p, tl), true
}

// addOf is process p's add among ops: its invocation and completion.
func addOf(ops []history.Op, p int) (inv, ret history.Op, ok bool) {
	var asked, done bool
	for _, op := range ops {
		if op.Process != p || op.F != history.FAdd {
			continue
		}
		if op.Type == history.Invoke {
			inv, asked = op, true
		} else if asked {
			ret, done = op, true
		}
	}
	return inv, ret, asked && done
}

// inFlight says how long a request took and the windows open meanwhile
// that can have slowed it.
func inFlight(faults []faultView, inv, ret history.Op, p int, tl *causeTimeline) string {
	open := openDuring(faults, inv.Time, ret.Time, p, tl)
	if len(open) == 0 {
		return fmt.Sprintf("; it took %s with no fault window open (a slow request)", span(ret.Time-inv.Time))
	}
	return fmt.Sprintf("; it took %s, with these windows open during it: %s", span(ret.Time-inv.Time), strings.Join(open, ", "))
}

// lateWriteAlone explains a write acknowledged after its holder's lease
// ran out while nobody else held the lock (a late-write finding): the
// request outlived the lease it was sent under, and the windows open while
// it was in flight are what slowed it.
func lateWriteAlone(a checker.Anomaly, faults []faultView, tl *causeTimeline) (string, bool) {
	if a.Kind != checker.KindLateWrite || len(a.Processes) != 1 || tl == nil {
		return "", false
	}
	p := a.Processes[0]
	inv, ret, ok := addOf(a.Ops, p)
	if !ok {
		return "", false
	}
	// The grant that set the lease: the process's last before the add
	// (the history is in index order).
	g, found := tl.grantBefore(a.Lock, p, inv.Index)
	if !found || inv.Time >= g.deadline() || ret.Time <= g.deadline() {
		return "", false
	}
	return fmt.Sprintf("a write outlived its lease: process %d's add was invoked at %s, inside its lease (to %s), and acknowledged at %s, "+
		"%s past it; nobody else held the lock meanwhile, so it overwrote no other holder's work this time",
		p, secs(inv.Time), secs(g.deadline()), secs(ret.Time), span(ret.Time-g.deadline())) + inFlight(faults, inv, ret, p, tl), true
}

// stuckLock explains a stuck-lock finding: the operation that ended its
// holder's process (its ops' last line, the info completion, and its
// invocation, from the ops or else the timeline), how long it was in
// flight, its error, and the windows open meanwhile, which are what can
// have left its outcome unknown.
func stuckLock(a checker.Anomaly, faults []faultView, tl *causeTimeline) (string, bool) {
	if a.Kind != checker.KindStuckLock || len(a.Processes) != 1 || len(a.Ops) == 0 {
		return "", false
	}
	p := a.Processes[0]
	ret := a.Ops[len(a.Ops)-1]
	if ret.Type != history.Info || ret.Process != p {
		return "", false
	}
	inv, ok := invocationOf(ret, a.Ops, tl)
	if !ok {
		return "", false
	}
	s := fmt.Sprintf("an abandoned holder: process %d's %s, invoked at %s while it held the lock with no lease, came back unknown at %s, "+
		"so its process ended with the grant (as Jepsen ends a process after an info), and a grant with no lease in the history is never freed by time",
		p, ret.F, secs(inv.Time), secs(ret.Time))
	took := fmt.Sprintf("; it took %s", span(ret.Time-inv.Time))
	if ret.Error != "" {
		took += fmt.Sprintf(" (error: %s)", ret.Error)
	}
	if open := openDuring(faults, inv.Time, ret.Time, p, tl); len(open) > 0 {
		return s + took + ", with these windows open during it: " + strings.Join(open, ", "), true
	}
	return s + took + ", with no fault window open", true
}

// invocationOf finds ret's invocation: the same process's last invoke of
// ret's f before it, among ops, else in the timeline.
func invocationOf(ret history.Op, ops []history.Op, tl *causeTimeline) (history.Op, bool) {
	find := func(ops []history.Op) (history.Op, bool) {
		for i := len(ops) - 1; i >= 0; i-- {
			if op := ops[i]; op.Index < ret.Index && op.Process == ret.Process && op.Type == history.Invoke && op.F == ret.F {
				return op, true
			}
		}
		return history.Op{}, false
	}
	if inv, ok := find(ops); ok {
		return inv, true
	}
	if tl == nil {
		return history.Op{}, false
	}
	return find(tl.before(ret.Index))
}

// openDuring names the windows open between from and to that can have
// slowed process p's requests: not a client clock (it moves no request),
// not a cut or clock aimed at another coordinator, not another process's
// pause.
func openDuring(faults []faultView, from, to int64, p int, tl *causeTimeline) []string {
	var open []string
	for _, w := range faults {
		if w.Kind == history.KindClientClock || w.Start > to || effectEnd(w) < from || tl.aimedElsewhere(w, p) {
			continue
		}
		if w.Kind == history.KindClientPause {
			if v, ok := decode[history.ClientPauseStart](w.Value, "process"); !ok || v.Process != p {
				continue
			}
		}
		if w.Kind == history.KindClientGCStall {
			if v, ok := decode[history.ClientStallStart](w.Value, "process"); !ok || v.Process != p {
				continue
			}
		}
		if v, ok := shapingOf(w); ok {
			open = append(open, fmt.Sprintf("%s (%s – %s: %s on %s)", w.Kind, secs(w.Start), secs(w.End), added(v.Shape), links(v)))
			continue
		}
		// A slowness window says whom it slowed and by how much.
		if s, ok := slownessText(w); ok {
			open = append(open, s)
			continue
		}
		open = append(open, fmt.Sprintf("%s (%s – %s)", w.Kind, secs(w.Start), secs(w.End)))
	}
	return open
}

// after says whether grant q took effect after grant g whatever order the
// model picks: q was asked for once g was answered, or q's lease outlasts
// g's answer (had q taken effect first, g would have had to wait for q's
// lease to end, and q's process can have done nothing in between).
func after(q, g grantOf) bool {
	return q.Invoke.Time > g.OK.Time || q.deadline() > g.OK.Time
}

// inSpan says whether a line at t lies in a piece's span.
func inSpan(a checker.Anomaly, t int64) bool {
	return t >= a.Start && (a.End == checker.Never || t <= a.End)
}

// grantInsideLease explains a piece of lock operations with no legal
// order by two owners at once: a process granted the lock inside another's
// lease, granted (or renewed) before it and not released since, whichever
// of the two the model orders first. That is an overlap, and its cause is
// the overlap's (likelyCause of the two holds), so the piece and the
// overlap the mutual-exclusion check reports read alike. The grants,
// leases and releases are the checker's (the grant that set a process's
// lease may lie long before the piece began).
func grantInsideLease(a checker.Anomaly, faults []faultView, tl *causeTimeline) (string, bool) {
	if a.Kind != checker.KindNonLinearizable || tl == nil {
		return "", false
	}
	lt := tl.lock(a.Lock)
	if lt == nil {
		return "", false
	}
	last := map[int]grantOf{}   // each process's latest lease
	released := map[int]int64{} // each process's latest release's invocation line
	r := 0
	for _, l := range lt.Leases {
		q := grantOf{l}
		for ; r < len(lt.Releases) && lt.Releases[r].Invoke.Index < q.OK.Index; r++ {
			released[lt.Releases[r].Process] = lt.Releases[r].Invoke.Index
		}
		if q.OK.F == history.FAcquire && q.Deadline != checker.Never && inSpan(a, q.OK.Time) {
			for _, p := range slices.Sorted(maps.Keys(last)) {
				g := last[p]
				if p == q.Process || released[p] > g.OK.Index || q.OK.Time >= g.deadline() || (g.OK.F == history.FAcquire && !after(q, g)) {
					continue
				}
				// The overlap's own operations: the two grants (what its
				// causes read; the rest they find in the timeline).
				overlap := checker.Anomaly{Kind: checker.KindOverlap, Check: checker.CheckMutex, Lock: a.Lock, Processes: []int{p, q.Process},
					Start: q.OK.Time, End: g.deadline(), Ops: []history.Op{g.Invoke, g.OK, q.Invoke, q.OK}}
				return fmt.Sprintf("two owners at once: process %d was granted the lock at %s, inside process %d's lease (granted at %s, to %s), "+
					"which process %d had not released; of that overlap: %s",
					q.Process, secs(q.OK.Time), p, secs(g.OK.Time), secs(g.deadline()), p, likelyCause(overlap, faults, tl)), true
			}
		}
		if a.End != checker.Never && q.OK.Time > a.End {
			break
		}
		if q.Deadline != checker.Never {
			last[q.Process] = q
		}
	}
	return "", false
}

// lapsedRelease explains a piece of lock operations with no legal order by
// the release the model cannot place: a process's release answered ok
// after its lease had run out and another process had been granted the
// lock after its own grant, as if it still held it (the model allows a
// late ok release only while nobody else acquired). The lock's release did
// not tell a hold it no longer had from its own. The windows open while
// that process held the lock are named as what let its hold run out.
func lapsedRelease(a checker.Anomaly, faults []faultView, tl *causeTimeline) (string, bool) {
	if a.Kind != checker.KindNonLinearizable || tl == nil {
		return "", false
	}
	lt := tl.lock(a.Lock)
	if lt == nil {
		return "", false
	}
	// The piece's releases answered ok, in the order of their answers.
	var oks []checker.Release
	for _, rel := range lt.Releases {
		if c := rel.Completion; c != nil && c.Type == history.OK && inSpan(a, c.Time) {
			oks = append(oks, rel)
		}
	}
	slices.SortFunc(oks, func(x, y checker.Release) int { return cmp.Compare(x.Completion.Index, y.Completion.Index) })
	for _, rel := range oks {
		p, inv, done := rel.Process, rel.Invoke, *rel.Completion
		g, held := tl.grantBefore(a.Lock, p, done.Index)
		if !held || inv.Time <= g.deadline() || inv.Index < g.OK.Index {
			continue
		}
		before := lt.Before(done.Index)
		for i := len(before) - 1; i >= 0 && before[i].OK.Time > g.deadline(); i-- {
			q := grantOf{before[i]}
			if q.OK.F != history.FAcquire || q.Deadline == checker.Never || q.Process == p || q.OK.Time >= inv.Time || !after(q, g) {
				continue
			}
			s := fmt.Sprintf("a release answered ok for a hold that had run out: process %d's lease ran out at %s (granted at %s), "+
				"process %d was granted the lock at %s, and process %d's release, invoked at %s, was answered ok at %s as if it still "+
				"held the lock; a lock's release that finds its lease expired or the lock another's must not report success, "+
				"or its caller cannot tell that its critical section ran unprotected",
				p, secs(g.deadline()), secs(g.OK.Time), q.Process, secs(q.OK.Time), p, secs(inv.Time), secs(done.Time))
			if open := openDuring(faults, g.Invoke.Time, inv.Time, p, tl); len(open) > 0 {
				s += fmt.Sprintf("; windows open while process %d held it: %s", p, strings.Join(open, ", "))
			}
			return s, true
		}
	}
	return "", false
}

// span says a duration of nanoseconds in milliseconds under a second, else
// in tenths of seconds.
func span(ns int64) string {
	if ns < 1e9 {
		return fmt.Sprintf("%d ms", ns/1e6)
	}
	return fmt.Sprintf("%.1f s", float64(ns)/1e9)
}

// grantedEarly explains a stale write whose writer was granted the lock
// while the other process's lease still ran: the two holds overlapped, and
// the overlap's cause (the server letting that lease go early) is the
// write's.
func grantedEarly(a checker.Anomaly, faults []faultView, tl *causeTimeline) (string, bool) {
	if a.Kind != checker.KindStaleWrite || len(a.Processes) < 2 {
		return "", false
	}
	p, q := a.Processes[0], a.Processes[1]
	mine, ok := tl.lastGrant(a.Lock, a.Ops, p)
	if !ok {
		return "", false
	}
	theirs, ok := tl.lastGrant(a.Lock, a.Ops, q)
	if !ok || theirs.OK.Time >= mine.OK.Time || mine.OK.Time >= theirs.deadline() {
		return "", false
	}
	overlap := checker.Anomaly{Kind: checker.KindOverlap, Lock: a.Lock, Processes: []int{q, p}, Start: mine.OK.Time, End: theirs.deadline(), Ops: a.Ops}
	return earlyExpiry(overlap, faults, tl)
}

// clientExpiry is how a client-clock window let a grant in before the
// holder's deadline, at at, or "" when the timeline does not support it:
// the window must be open then and skew one of the two processes' clients
// (a process whose client the history does not say leaves it possible). The
// server kept no expiry for such a lock: the clients judged it by their
// clocks.
func clientExpiry(w faultView, at int64, tl *causeTimeline, processes ...int) string {
	v, ok := decode[history.ClientClockStart](w.Value, "client")
	if !ok || v.Offset == "" || w.Start > at || w.End < at {
		return ""
	}
	if !tl.mayBeClient(v.Client, processes...) {
		return ""
	}
	if strings.HasPrefix(v.Offset, "+") {
		return fmt.Sprintf("skewed client: client %d's clock ran %s ahead (client-clock, %s – %s): a lock whose expiry is an instant of "+
			"the client's clock (ShedLock's lockUntil, Astyanax's lock column) found the holder's lock expired early",
			v.Client, strings.TrimPrefix(v.Offset, "+"), secs(w.Start), secs(w.End))
	}
	return fmt.Sprintf("skewed client: client %d's clock ran %s behind (client-clock, %s – %s): a lock that writes its expiry as an "+
		"instant of the client's clock (Astyanax's lock column, ShedLock's lockUntil) made a claim the others counted expired "+
		"as soon as it was written, so a contender was let in beside it", v.Client, strings.TrimPrefix(v.Offset, "-"), secs(w.Start), secs(w.End))
}

// mayBeClient says whether one of processes may be client c's: it is, or
// the history does not say whose it is (nor whose processes are, when the
// anomaly names none).
func (tl *causeTimeline) mayBeClient(c int, processes ...int) bool {
	return len(processes) == 0 || slices.ContainsFunc(processes, func(p int) bool {
		pc, known := tl.clientOf(p)
		return !known || pc == c
	})
}
