package reports

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/faultkind"
	"github.com/lockcheck/lockcheck/history"
)

// A report says why, not only what: where the mechanism behind an anomaly is
// known from the fault windows active in its span, the anomaly carries the
// likely cause in words. Each rule is a fault kind, the anomaly kinds it
// explains and the sentence; where none applies the report says nothing
// rather than guess.
type causeRule struct {
	fault     string
	anomalies []string
	explain   func(w faultView, a checker.Anomaly) (string, bool)
	// lasting faults explain anomalies after their window too: what a
	// power loss threw away stays lost after the node is back.
	lasting bool
}

// causeRules are the causes the reports keep themselves: the slowness
// kinds' (slowness.go), whose words the timeline's late write also says.
// Every other kind declares its own (nemesis.Kind.Cause, rules).
var causeRules = slownessRules

// decode reads a fault line's value into its history type
// (faultkind.Decode).
func decode[T any](raw json.RawMessage, required ...string) (T, bool) {
	return faultkind.Decode[T](raw, required...)
}

// rules are the fault kinds' causes: those the kinds declare
// (nemesis.Kind.Cause, registered in package faultkind), in table order,
// then the reports' own (causeRules).
func rules() []causeRule {
	var out []causeRule
	for _, r := range faultkind.Causes() {
		out = append(out, causeRule{fault: r.Kind, anomalies: r.Anomalies, lasting: r.Lasting,
			explain: func(w faultView, a checker.Anomaly) (string, bool) {
				return r.Explain(w.FaultWindow, faultkind.Anomaly{Kind: a.Kind, Processes: a.Processes, Start: a.Start, End: a.End})
			}})
	}
	return append(out, causeRules...)
}

// likelyCause is the sentence for a, derived from the timeline (tl: the
// history's operations, nil when not at hand) and the fault windows active
// in its span, or noFault when neither supports a mechanism.
func likelyCause(a checker.Anomaly, faults []faultView, tl *causeTimeline) string {
	if s, ok := abandonedHold(a, tl); ok {
		return s
	}
	if s, ok := stuckLock(a, faults, tl); ok {
		return s
	}
	if s, ok := deletedValueBack(a, faults, tl); ok {
		return s
	}
	s := faultCause(a, faults, tl)
	same, ok := sameClient(a, tl)
	switch {
	case !ok:
		return s
	case s == noFault:
		return same
	}
	// The history does not say whether the lock tells one client's
	// processes apart: if it does, the other mechanisms stand.
	return same + ". If the lock tells the two processes apart: " + s
}

// faultCause is likelyCause's sentence from the faults and the timeline,
// as if the anomaly's processes were two clients.
func faultCause(a checker.Anomaly, faults []faultView, tl *causeTimeline) string {
	if s, ok := earlyExpiry(a, faults, tl); ok {
		return s
	}
	var causes []string
	if s, ok := lateWrite(a, faults, tl); ok {
		causes = append(causes, s)
	} else if s, ok := grantedEarly(a, faults, tl); ok {
		causes = append(causes, s)
	} else if s, ok := grantInsideLease(a, faults, tl); ok {
		causes = append(causes, s)
	} else if s, ok := lapsedRelease(a, faults, tl); ok {
		causes = append(causes, s)
	} else if s, ok := lateWriteAlone(a, faults, tl); ok {
		causes = append(causes, s)
	}
	overwrite, certain, overwritten := lostAddCause(a, faults, tl)
	if overwritten && certain {
		causes = append(causes, overwrite)
	}
	for _, r := range rules() {
		if !slices.Contains(r.anomalies, a.Kind) {
			continue
		}
		// A lost add's stalled writer is the overwriter's process, named
		// above from the timeline, not the lost add's own.
		if r.fault == history.KindClientPause && a.Kind == checker.KindLostAdd {
			continue
		}
		for _, w := range faults {
			if w.Kind != r.fault || (effectEnd(w) < a.Start && !r.lasting) || (a.End != checker.Never && w.Start > a.End) {
				continue
			}
			if tl.aimedElsewhere(w, a.Processes...) {
				continue
			}
			if w.Kind == history.KindClientClock && !clientClockBears(w, a, tl) {
				continue
			}
			if c, ok := r.explain(w, a); ok && !slices.Contains(causes, c) && !slownessNamed(causes, w) {
				causes = append(causes, c)
			}
		}
	}
	if len(causes) == 0 && overwritten {
		causes = append(causes, overwrite)
	}
	if len(causes) == 0 {
		return noFault
	}
	return strings.Join(causes, "; or ")
}

func jsonInts(raw json.RawMessage, v any) error { return json.Unmarshal(raw, v) }

// clientList says "client 1" or "clients 1, 4".
func clientList(cs []int) string { return faultkind.ClientList(cs) }

// secondsText writes a Go duration such as "+4.512s" as "4.5 s".
func secondsText(d string) string { return faultkind.SecondsText(d) }

// offsetOf reads a recorded clock offset, a Go duration with an optional
// sign ("+4.512s").
func offsetOf(d string) (time.Duration, bool) { return faultkind.Offset(d) }

// clientClockBears says whether a client-clock window can have caused a:
// a skew acts through its client's own requests, so the window must have
// begun before the anomaly did (for a lost add, before the add was
// acknowledged, after which nothing can undo it but an overwrite) and, but
// for a lost add, whose overwriter is another process, skew a client that
// one of its processes may be.
func clientClockBears(w faultView, a checker.Anomaly, tl *causeTimeline) bool {
	v, ok := decode[history.ClientClockStart](w.Value, "client")
	if !ok {
		return false
	}
	by := a.Start
	if a.Kind == checker.KindLostAdd {
		for _, op := range a.Ops {
			if op.F == history.FAdd && op.Type == history.OK {
				by = op.Time
			}
		}
		return w.Start <= by
	}
	if a.Kind == checker.KindNonLinearizable {
		by = a.End
	}
	return w.Start <= by && tl.mayBeClient(v.Client, a.Processes...)
}
