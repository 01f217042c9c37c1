package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/lockcheck/lockcheck/history"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// Hold is an interval during which a process held a lock, as history.md
// defines it: from its ok acquire until the earliest of the invocation of its
// next release, the invocation of its last ok acquire or renew plus lease_ms,
// and the end of the history. End is exclusive. An ok acquire or renew
// invoked after the lease ran out does not bridge the gap: the hold ended at
// the expiry, and the grant starts a new one.
type Hold struct {
	Lock    string `json:"lock"`
	Process int    `json:"process"`
	Start   int64  `json:"start"`
	End     int64  `json:"end"`
	// How it ended: "release", "expired" or "end" (of the history).
	Ended      string `json:"ended"`
	AcquireIdx int    `json:"acquire_index"` // the ok acquire's line index
}

// holdRec is a hold while the checks still need it.
type holdRec struct {
	Hold
	expiry   int64
	open     bool
	released bool   // its process invoked a release since it began, which did not definitely fail
	token    tokVal // the fencing token of its latest grant (token.go)
	acq, rel *call
	grant    *call // its latest grant: the ok acquire (or renew) that started it, or a later ok acquire that was a new grant (a re-entrant one is not: fencing.go)
	// lastGrant is the ok acquire or renew whose lease sets its expiry (a
	// leader's last heartbeat): an anomaly shows it beside the hold's
	// start and release, since it set the hold's end.
	lastGrant *call
	// grantLease is the lease_ms of its latest ok acquire: an ok renew
	// without lease_ms renews for that long.
	grantLease int64
	l          *lockSt
}

// Holds computes every hold of a (valid) history, ordered by start.
func Holds(ops []history.Op) []Hold {
	e := newMulti(context.Background(), newConfig(nil), true, false)
	for _, op := range ops {
		e.feed(op)
	}
	return e.finish().Holds
}

// granted: an ok acquire or renew starts a hold or extends it.
func (l *lockSt) granted(c *call) {
	exp := expiry(c.inv, c.leaseMS)
	var tok tokVal
	var orig *call // for a re-entrant acquire, the grant of the token it hands back
	if c.f == history.FAcquire {
		tok = parseToken(c.retLine.value)
		if !l.e.holdsOnly {
			// A holder's own acquire that hands it back the token it
			// holds (a re-entrant acquire, perhaps after the lease_ms the
			// client counts but before the lock's own TTL) is no new
			// grant, unless it released since (fencing.go): it extends
			// the lease, and the hold's grant stays the one that gave
			// the token.
			orig = l.fence.granted(l, c, tok)
		}
	}
	if h := l.openHold(c.proc); h != nil {
		if c.inv < h.expiry {
			h.expiry = exp // the last ok acquire or renew sets the lease
			h.lastGrant = c
			if c.f == history.FAcquire {
				h.grantLease = c.leaseMS
				if orig == nil {
					h.grant = c
					if tok.has() {
						h.token = tok
					}
				}
			}
			return
		}
		// The lease ran out before this grant was invoked: the hold ended
		// then, and another process may have held the lock in between. The
		// new grant starts a new hold.
		l.closeHold(h, h.expiry, "expired", nil)
	} else if last := c.ps.latest(l); c.f == history.FRenew && (last == nil || last.released) {
		// A renew ok without a hold starts nothing; after a lease that
		// ran out (and no release), it starts a new hold.
		return
	}
	h := &holdRec{Hold: Hold{Lock: l.name, Process: c.proc, Start: c.ret, AcquireIdx: int(c.retLine.index)},
		expiry: exp, open: true, acq: c, grant: c, lastGrant: c, l: l}
	if c.f == history.FAcquire {
		h.grantLease = c.leaseMS
	} else if last := c.ps.latest(l); last != nil {
		h.grantLease = last.grantLease
	}
	h.token = tok
	if orig != nil {
		h.grant = orig
	}
	l.openHolds = append(l.openHolds, h)
	c.ps.remember(h)
}

func (l *lockSt) releaseInvoked(c *call) {
	if h := c.ps.latest(l); h != nil {
		h.released = true
	} else if ft, ok := l.fence.forgotten[c.proc]; ok {
		ft.released = true
		l.fence.forgotten[c.proc] = ft
	}
	if h := l.openHold(c.proc); h != nil {
		l.closeHold(h, c.inv, "release", c)
	}
}

// releaseFailed: the process's latest hold was not released after all, so
// that its re-entrant acquire handing back the token it holds is no
// regression (a decommissioning coordinator refuses the release: "Server
// is shutting down", and the lease stays the holder's).
func (l *lockSt) releaseFailed(c *call) {
	if h := c.ps.latest(l); h != nil {
		h.released = false
	} else if ft, ok := l.fence.forgotten[c.proc]; ok {
		ft.released = false
		l.fence.forgotten[c.proc] = ft
	}
}

// openHold is p's open hold of l, if any.
func (l *lockSt) openHold(p int) *holdRec {
	for _, h := range l.openHolds {
		if h.Process == p {
			return h
		}
	}
	return nil
}

// expire closes the holds whose lease ran out before now, unless an acquire
// or renew of their process invoked before the expiry may still extend them.
func (l *lockSt) expire(now int64) {
	for i := 0; i < len(l.openHolds); i++ {
		h := l.openHolds[i]
		if h.expiry >= now {
			continue
		}
		if c := l.e.openCall(h.Process); c != nil && c.l == l && (c.f == history.FAcquire || c.f == history.FRenew) && c.inv < h.expiry {
			continue
		}
		l.closeHold(h, h.expiry, "expired", nil)
		i-- // the last open hold took its place
	}
}

// closeAll ends every open hold at the end of the history.
func (l *lockSt) closeAll(end int64) {
	hs := slices.Clone(l.openHolds)
	sort.Slice(hs, func(i, j int) bool { return hs[i].Process < hs[j].Process })
	for _, h := range hs {
		l.closeHold(h, end, "end", nil)
	}
}

func sortedKeys[V any](m map[int]V) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

// closeHold ends h and checks it against the closed holds it may overlap.
func (l *lockSt) closeHold(h *holdRec, at int64, how string, rel *call) {
	h.End, h.Ended = at, how
	if h.expiry < at {
		h.End, h.Ended = h.expiry, "expired"
	}
	if h.Ended == "release" {
		h.rel = rel
	}
	h.open = false
	if l.e.tl != nil {
		l.e.tl.closed(h)
	}
	if i := slices.Index(l.openHolds, h); i >= 0 {
		last := len(l.openHolds) - 1
		l.openHolds[i] = l.openHolds[last]
		l.openHolds[last] = nil
		l.openHolds = l.openHolds[:last]
	}
	e := l.e
	e.nHolds++
	if e.keepHolds || e.holdsOnly {
		e.holds = append(e.holds, h.Hold)
	}
	if !e.holdsOnly {
		for _, o := range l.closed {
			l.checkOverlap(o, h)
		}
	}
	l.closed = append(l.closed, h)
	l.retire(at)
}

// endGrant is the grant that set h's end when its lease ended it and that
// grant is not the one that started it (a heartbeat, a re-acquire), else
// nil.
func (h *holdRec) endGrant() *call {
	if h.Ended != "expired" || h.lastGrant == h.acq {
		return nil
	}
	return h.lastGrant
}

// checkOverlap reports two holds of different processes that overlap.
func (l *lockSt) checkOverlap(x, y *holdRec) {
	a, b := x, y
	if b.Start < a.Start || (b.Start == a.Start && b.Process < a.Process) {
		a, b = b, a
	}
	if a.Process == b.Process || b.End <= b.Start || a.End <= a.Start || a.End <= b.Start {
		return
	}
	e := l.e
	e.nOverlap++
	end := min(a.End, b.End)
	e.mutex.add(Anomaly{
		Kind: KindOverlap, Check: CheckMutex, Lock: l.name,
		Processes: []int{a.Process, b.Process}, Start: b.Start, End: end,
		Message: fmt.Sprintf("processes %d and %d both held lock %q for %s (from %s to %s)",
			a.Process, b.Process, l.name, fmtDur(end-b.Start), fmtTime(b.Start), fmtTime(end)),
		Ops: opsOf(a.acq, a.endGrant(), a.rel, b.acq, b.endGrant(), b.rel),
	}, e.cfg.maxReports, e.mutexKinds)
}

// retire drops the closed holds that can overlap nothing to come: a hold
// still open overlaps a closed one only if it started before that one
// ended, an add still running only if it was invoked before that one ended,
// and every hold to come starts at or after now.
func (l *lockSt) retire(now int64) {
	if len(l.closed) < 8 {
		return
	}
	t := now
	for _, h := range l.openHolds {
		t = min(t, h.Start)
	}
	if l.res != nil {
		for _, c := range l.res.running {
			t = min(t, c.inv)
		}
	}
	kept := l.closed[:0]
	for _, h := range l.closed {
		if h.End > t {
			kept = append(kept, h)
		} else {
			h.rel = nil // it may stay as its process's latest hold: keep it small
			h.lastGrant = nil
		}
	}
	clear(l.closed[len(kept):])
	l.closed = kept
}

func (e *engine) finishMutex(locks int) {
	if e.nOverlap > 0 {
		e.mutex.result.Verdict = Invalid
		e.mutex.result.Detail = fmt.Sprintf("%d overlapping holds", e.nOverlap)
	} else {
		e.mutex.result.Detail = fmt.Sprintf("%d holds on %d locks, none overlapping", e.nHolds, locks)
	}
}

func fmtTime(ns int64) string {
	if ns == Never {
		return "never"
	}
	return fmt.Sprintf("%.6fs", float64(ns)/1e9)
}

func fmtDur(ns int64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3fs", float64(ns)/1e9)
	case ns >= 1e3*1e3:
		return fmt.Sprintf("%.3fms", float64(ns)/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1fµs", float64(ns)/1e3)
	default:
		return fmt.Sprintf("%dns", ns)
	}
}
