package checker

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/lockcheck/lockcheck/history"
)

// The timeline is the grants and leases the mutual-exclusion check derives
// while it judges a history, written down as it derives them: the same
// holds, the same deadlines (a renew without lease_ms renews for its
// grant's lease), the same re-entrant rule, the same ends. A report that
// explains an anomaly reads it rather than replaying the history with a
// model of its own, so that a cause it names is one the verdict's own
// model supports. It is kept only when asked for (WithTimeline,
// TimelineOf): a streaming check keeps nothing that grows with the
// history, and the hooks cost a nil test when it is off.

// Timeline is the grants of each lock, as the checks derived them.
type Timeline struct {
	Locks map[string]*LockTimeline
}

// LockTimeline is one lock's grants, the leases that set their ends, and
// the releases asked of it, each in line order.
type LockTimeline struct {
	Lock string
	// Grants are the holds the mutual-exclusion check judged, in order of
	// the ok line that began each.
	Grants []Grant
	// Leases are the ok acquires and renews the check counted (a renew
	// with no hold to extend counts for nothing), in line order.
	Leases []Lease
	// Releases are the releases invoked on the lock, in line order.
	Releases []Release
}

// Grant is one hold of a lock: the grant that began it, the leases that
// extended it, and how it ended.
type Grant struct {
	Lock    string
	Process int
	// Client is the process's client, where the meta line says
	// (ClientKnown).
	Client      int
	ClientKnown bool
	// Start is when it began: the answer of the acquire (or renew after a
	// lease that ran out) that is its first lease.
	Start int64
	// Token is the value of its latest new grant's ok acquire (a fencing
	// token, for a lock that hands them out); a re-entrant acquire keeps
	// it.
	Token json.RawMessage
	// Leases are the indices in LockTimeline.Leases of the ok acquires
	// and renews that set its deadline, the first the one that began it
	// (LockTimeline.Began): the lines are kept there only, once.
	Leases []int
	// Deadline is when its latest lease ran out (Never: no lease).
	Deadline int64
	// End is when the check ended the hold, and Ended how: "release" (at
	// Release's invocation), "expired" (at Deadline) or "end" (of the
	// history).
	End   int64
	Ended string
	// Release is the index in LockTimeline.Releases of the release whose
	// invocation ended it, -1 for none.
	Release int
	// Lost is the completion with an unknown outcome that ended its
	// process while it held the lock: nothing of that process releases or
	// renews it after.
	Lost *history.Op
}

// Lease is an ok acquire or renew the check counted: it began a grant or
// set a later deadline for it.
type Lease struct {
	// Grant is the index in LockTimeline.Grants of the grant it began or
	// extended.
	Grant   int
	Process int
	// Invoke and OK are its lines; the lease counts from the invocation.
	Invoke, OK history.Op
	// Deadline is when it runs out (Never: no lease). A renew answered
	// without lease_ms renews for its grant's lease.
	Deadline int64
	// Renewal: it extended a grant that began before it (a renew, or the
	// holder's own acquire); false for the one that began its grant.
	Renewal bool
	// Reentrant: a renewal by acquire that the check did not count as a
	// new grant (it handed back the token the holder holds: fencing.go).
	Reentrant bool
}

// Release is a release invoked on a lock, and its completion once read.
type Release struct {
	Process    int
	Invoke     history.Op
	Completion *history.Op
}

// WithTimeline keeps the timeline of grants and leases in Result.Timeline.
func WithTimeline() Option { return func(c *config) { c.timeline = true } }

// TimelineOf is the timeline of grants and leases the checks derive from
// ops (a validated history, as CheckValidated takes).
func TimelineOf(ops []history.Op) *Timeline {
	return check(context.Background(), ops, newConfig([]Option{WithTimeline()})).Timeline
}

// Began is the lease that began grant i: its acquire's lines.
func (lt *LockTimeline) Began(i int) Lease { return lt.Leases[lt.Grants[i].Leases[0]] }

// Lock is the timeline of one lock, nil when it had no operation.
func (t *Timeline) Lock(name string) *LockTimeline {
	if t == nil {
		return nil
	}
	return t.Locks[name]
}

// LeaseAt is the lease whose ok line is index.
func (lt *LockTimeline) LeaseAt(index int64) (Lease, bool) {
	if lt == nil {
		return Lease{}, false
	}
	i := sort.Search(len(lt.Leases), func(i int) bool { return lt.Leases[i].OK.Index >= index })
	if i < len(lt.Leases) && lt.Leases[i].OK.Index == index {
		return lt.Leases[i], true
	}
	return Lease{}, false
}

// Before is the leases whose ok line came before index.
func (lt *LockTimeline) Before(index int64) []Lease {
	if lt == nil {
		return nil
	}
	return lt.Leases[:sort.Search(len(lt.Leases), func(i int) bool { return lt.Leases[i].OK.Index >= index })]
}

// timelineRec writes one shard's timeline as its checks go. The checks
// call it only when it is there (a nil test), so that without it they
// allocate nothing more.
type timelineRec struct {
	meta  func() *history.Meta
	locks map[string]*LockTimeline
	open  map[*holdRec]int // the grant of each open hold
	rels  map[*call]int    // releases awaiting their completion (or the hold they end)
}

func newTimelineRec(cfg config, e *engine) *timelineRec {
	if !cfg.timeline {
		return nil
	}
	return &timelineRec{meta: func() *history.Meta { return e.meta }, locks: map[string]*LockTimeline{},
		open: map[*holdRec]int{}, rels: map[*call]int{}}
}

func (t *timelineRec) lock(l *lockSt) *LockTimeline {
	lt := t.locks[l.name]
	if lt == nil {
		lt = &LockTimeline{Lock: l.name}
		t.locks[l.name] = lt
	}
	return lt
}

// invoked takes a call of l as it is invoked: a release is written down
// (if the hold it ended has not written it down already).
func (t *timelineRec) invoked(l *lockSt, c *call) {
	if t == nil || c.f != history.FRelease {
		return
	}
	t.release(l, c)
}

// release is the index of release c in its lock's releases, written down
// at its first sight.
func (t *timelineRec) release(l *lockSt, c *call) int {
	if i, ok := t.rels[c]; ok {
		return i
	}
	lt := t.lock(l)
	t.rels[c] = len(lt.Releases)
	lt.Releases = append(lt.Releases, Release{Process: c.proc, Invoke: c.invokeOp()})
	return t.rels[c]
}

// completed takes a call of l as the checks have just judged its
// completion (granted, releaseFailed), before any hold expires at it.
func (t *timelineRec) completed(l *lockSt, c *call) {
	if t == nil {
		return
	}
	if c.f == history.FRelease {
		if i, ok := t.rels[c]; ok {
			delete(t.rels, c)
			op := c.completionOp()
			t.lock(l).Releases[i].Completion = &op
		}
		return
	}
	if c.typ != history.OK || (c.f != history.FAcquire && c.f != history.FRenew) {
		return
	}
	h := l.openHold(c.proc)
	if h == nil || h.lastGrant != c {
		return // the checks counted it for nothing (a renew with no hold)
	}
	lt := t.lock(l)
	ls := Lease{Process: c.proc, Invoke: c.invokeOp(), OK: c.completionOp(), Deadline: h.expiry}
	if h.acq == c {
		client, known := t.meta().ClientOf(c.proc)
		t.open[h] = len(lt.Grants)
		lt.Grants = append(lt.Grants, Grant{Lock: l.name, Process: c.proc, Client: client, ClientKnown: known,
			Start: c.ret, End: Never, Ended: "open", Release: -1})
	} else {
		ls.Renewal = true
		ls.Reentrant = c.f == history.FAcquire && h.grant != c
	}
	ls.Grant = t.open[h]
	g := &lt.Grants[ls.Grant]
	if !ls.Reentrant && (c.f == history.FAcquire || !ls.Renewal) {
		g.Token = ls.OK.Value
	}
	g.Deadline = h.expiry
	g.Leases = append(g.Leases, len(lt.Leases))
	lt.Leases = append(lt.Leases, ls)
}

// closed takes a hold the checks have just ended.
func (t *timelineRec) closed(h *holdRec) {
	if t == nil {
		return
	}
	i, ok := t.open[h]
	if !ok {
		return
	}
	delete(t.open, h)
	g := &t.lock(h.l).Grants[i]
	g.End, g.Ended, g.Deadline = h.End, h.Ended, h.expiry
	if h.Ended == "release" && h.rel != nil {
		g.Release = t.release(h.l, h.rel) // closed at the release's invocation
	}
}

// abandoned takes the completion with an unknown outcome that ends
// process ps (it invokes nothing after): the holds it has open are lost.
func (t *timelineRec) abandoned(ps *procSt, op history.Op) {
	if t == nil {
		return
	}
	for _, h := range ps.recent {
		if i, ok := t.open[h]; ok && h.open {
			lost := op
			t.lock(h.l).Grants[i].Lost = &lost
		}
	}
}

// timeline merges the shards' timelines (each lock is one shard's).
func (m *multi) timeline() *Timeline {
	if !m.cfg.timeline || m.holdsOnly {
		return nil
	}
	tl := &Timeline{Locks: map[string]*LockTimeline{}}
	for _, e := range m.shards {
		for n, lt := range e.tl.locks {
			tl.Locks[n] = lt
		}
	}
	return tl
}
