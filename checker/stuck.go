package checker

import (
	"fmt"

	"github.com/lockcheck/lockcheck/history"
)

// stuckRec is a lock held for good: its holder's process ended with an
// info (the workload abandoned it, its last operation's outcome unknown)
// while it held a grant with no lease. Nothing will release or expire that
// hold, so the lock can never be granted again without breaking mutual
// exclusion, and a run whose clients keep waiting on it tests little from
// then on. It is a liveness finding, not a safety one: it never fails a run.
type stuckRec struct {
	since   int64 // the abandoning completion
	proc    int
	ops     []history.Op // the grant and the operation that ended its process
	failed  int          // acquires invoked since, completed fail or info (or never)
	granted int          // acquires invoked since, completed ok
}

// abandonHolds marks the open holds without a lease of a process that
// completed with info (at op) as stuck.
func (e *engine) abandonHolds(ps *procSt, op history.Op, last *call) {
	if e.tl != nil {
		e.tl.abandoned(ps, op)
	}
	if e.holdsOnly {
		return // Holds wants no findings
	}
	for _, h := range ps.recent {
		if !h.open || h.expiry != Never || h.l.stuck != nil {
			continue
		}
		s := &stuckRec{since: op.Time, proc: op.Process}
		s.ops = opsOf(h.grant)
		if last != nil {
			s.ops = append(s.ops, last.invokeOp())
		}
		s.ops = append(s.ops, op)
		h.l.stuck = s
	}
}

// countStuckAcquire counts an acquire of a stuck lock invoked after it got
// stuck.
func (l *lockSt) countStuckAcquire(c *call) {
	if s := l.stuck; s != nil && c.f == history.FAcquire && c.inv >= s.since {
		if c.done && c.typ == history.OK {
			s.granted++
		} else {
			s.failed++
		}
	}
}

// stuckFinding reports a stuck lock at the end of the history.
func (l *lockSt) stuckFinding() {
	s := l.stuck
	if s == nil {
		return
	}
	e := l.e
	end := max(e.end, s.since)
	share := ""
	if e.end > 0 {
		share = fmt.Sprintf(", %.0f%% of the run", 100*float64(end-s.since)/float64(e.end))
	}
	after := "no process asked for it after"
	if s.failed+s.granted > 0 {
		after = fmt.Sprintf("%s of it failed, came back unknown or got no answer, %s granted",
			plural(s.failed, "1 later acquire", "%d later acquires"), plural(s.granted, "1 was", "%d were"))
	}
	way := "run --retire-stuck moves the clients to a fresh lock name when this happens"
	if e.meta.RetiresStuck() {
		way = "the run's clients moved to a fresh lock name (--retire-stuck)"
	}
	e.mutex.findings = append(e.mutex.findings, Anomaly{
		Kind: KindStuckLock, Check: CheckMutex, Lock: l.name, Processes: []int{s.proc},
		Start: s.since, End: end, Ops: s.ops,
		Message: fmt.Sprintf("lock %q was held for good from %s to the end (%s%s): process %d ended holding a grant with no lease, "+
			"its last operation's outcome unknown, so nothing in the history releases or expires the hold; %s; %s",
			l.name, fmtTime(s.since), fmtDur(end-s.since), share, s.proc, after, way),
	})
}

// LeftWaiting are the stuck-lock findings of a run whose clients went on
// waiting on the stuck lock (it ran without --retire-stuck) and were never
// granted it after: the run tested little on that lock from the finding's
// start, which a valid verdict hides, so the report and `run` say them
// first. A lock granted again overlaps its stuck hold: that overlap speaks
// for itself.
func (r Result) LeftWaiting() []Anomaly {
	if r.Meta.RetiresStuck() {
		return nil // the clients moved to fresh names
	}
	overlapped := func(f Anomaly) bool {
		for _, as := range [][]Anomaly{r.Anomalies, r.Findings} {
			for _, a := range as {
				if a.Kind == KindOverlap && a.Lock == f.Lock && a.End > f.Start {
					return true
				}
			}
		}
		return false
	}
	var out []Anomaly
	for _, f := range r.Findings {
		if f.Kind == KindStuckLock && !overlapped(f) {
			out = append(out, f)
		}
	}
	return out
}
