package checker

import (
	"encoding/json"
	"fmt"
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
	acq        *call
	rel        *call
}

// Holds computes every hold of a (valid) history, ordered by start.
func Holds(ops []history.Op) []Hold {
	h := &hist{ops: ops, calls: pairCalls(ops)}
	if len(ops) > 0 {
		h.end = ops[len(ops)-1].Time
	}
	return h.holds()
}

type procLock struct {
	proc int
	lock string
}

func (h *hist) holds() []Hold {
	type open struct {
		hold   Hold
		expiry int64
	}
	cur := map[procLock]*open{}
	var out []Hold
	closeHold := func(o *open, at int64, how string, rel *call) {
		o.hold.End, o.hold.Ended = at, how
		if o.expiry < at {
			o.hold.End, o.hold.Ended = o.expiry, "expired"
		}
		if rel != nil && o.hold.Ended == "release" {
			o.hold.rel = rel
		}
		out = append(out, o.hold)
	}
	// Walk lines in file order: an ok acquire starts a hold at its
	// completion; a release ends it at its invocation. callAt maps a line
	// to its call.
	callAt := make([]int32, len(h.ops))
	for i := range h.calls {
		c := &h.calls[i]
		callAt[c.invIdx] = int32(i)
		if c.retIdx >= 0 {
			callAt[c.retIdx] = int32(i)
		}
	}
	for i := range h.ops {
		op := &h.ops[i]
		if op.Process < 0 {
			continue
		}
		key := procLock{op.Process, op.Lock}
		switch {
		case op.F == history.FRelease && op.Type == history.Invoke:
			if o := cur[key]; o != nil {
				closeHold(o, op.Time, "release", &h.calls[callAt[i]])
				delete(cur, key)
			}
		case (op.F == history.FAcquire || op.F == history.FRenew) && op.Type == history.OK:
			c := &h.calls[callAt[i]]
			key.lock = c.lock // a completion may omit the lock
			exp := expiry(c.inv, c.leaseMS)
			if o := cur[key]; o != nil {
				if c.inv < o.expiry {
					o.expiry = exp // the last ok acquire or renew sets the lease
					continue
				}
				// The lease ran out before this grant was invoked: the
				// hold ended then, and another process may have held the
				// lock in between. The new grant starts a new hold.
				closeHold(o, o.expiry, "expired", nil)
				delete(cur, key)
			} else if op.F == history.FRenew {
				continue // a renew ok without a hold starts nothing
			}
			cur[key] = &open{hold: Hold{Lock: c.lock, Process: c.proc, Start: op.Time, AcquireIdx: int(op.Index), acq: c}, expiry: exp}
		}
	}
	for _, o := range cur {
		closeHold(o, h.end, "end", nil)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Start != out[j].Start {
			return out[i].Start < out[j].Start
		}
		return out[i].Process < out[j].Process
	})
	return out
}

// checkMutex finds overlapping holds of one lock by different processes.
func (h *hist) checkMutex(holds []Hold) checkOutput {
	out := checkOutput{result: CheckResult{Name: CheckMutex, Verdict: Valid}}
	perKind := map[string]int{}
	byLock := map[string][]int{}
	for i := range holds {
		byLock[holds[i].Lock] = append(byLock[holds[i].Lock], i)
	}
	locks := make([]string, 0, len(byLock))
	for l := range byLock {
		locks = append(locks, l)
	}
	sort.Strings(locks)
	n := 0
	for _, l := range locks {
		// Sweep by start: active holds are those not yet ended.
		var active []int
		for _, i := range byLock[l] {
			b := &holds[i]
			kept := active[:0]
			for _, j := range active {
				if holds[j].End > b.Start {
					kept = append(kept, j)
				}
			}
			active = kept
			for _, j := range active {
				a := &holds[j]
				if a.Process == b.Process || b.End <= b.Start || a.End <= a.Start {
					continue
				}
				n++
				end := min(a.End, b.End)
				var cs []*call
				for _, c := range []*call{a.acq, a.rel, b.acq, b.rel} {
					if c != nil {
						cs = append(cs, c)
					}
				}
				out.add(Anomaly{
					Kind: KindOverlap, Check: CheckMutex, Lock: l,
					Processes: []int{a.Process, b.Process}, Start: b.Start, End: end,
					Message: fmt.Sprintf("processes %d and %d both held lock %q for %s (from %s to %s)",
						a.Process, b.Process, l, fmtDur(end-b.Start), fmtTime(b.Start), fmtTime(end)),
					Ops: h.opsOf(cs...),
				}, h.cfg.maxReports, perKind)
			}
			active = append(active, i)
		}
	}
	if n > 0 {
		out.result.Verdict = Invalid
		out.result.Detail = fmt.Sprintf("%d overlapping holds", n)
	} else {
		out.result.Detail = fmt.Sprintf("%d holds on %d locks, none overlapping", len(holds), len(locks))
	}
	return out
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
	case ns >= 1e6:
		return fmt.Sprintf("%.3fms", float64(ns)/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1fµs", float64(ns)/1e3)
	default:
		return fmt.Sprintf("%dns", ns)
	}
}
