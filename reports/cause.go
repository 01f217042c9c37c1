package reports

import (
	"encoding/json"
	"fmt"
	"maps"
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

var causeRules = append([]causeRule{
	// A killed process never releases what it held: lasting.
	{fault: history.KindClientKill, lasting: true, anomalies: []string{checker.KindStuckLock, checker.KindOverlap, checker.KindNonLinearizable, checker.KindStaleWrite},
		explain: func(w faultView, a checker.Anomaly) (string, bool) {
			v, ok := decode[history.ClientKillStart](w.Value, "process")
			if !ok {
				return "", false
			}
			if len(a.Processes) > 0 && !slices.Contains(a.Processes, v.Process) && a.Kind == checker.KindStuckLock {
				return "", false
			}
			what := "holding the lock"
			if v.InFlight != "" && v.InFlight != "hold" {
				what = "with its " + v.InFlight + " in flight"
			}
			s := fmt.Sprintf("client %d's process %d was killed %s at %s (client-kill) and never released %s; a fresh process of the client started %.1f s later as a new owner",
				v.Client, v.Process, what, secs(w.Start), v.Lock, float64(v.RestartMS)/1000)
			if a.Kind == checker.KindStuckLock {
				return s + ": a lock with no TTL stays held by the dead process until someone frees it by hand", true
			}
			return s + ": a request the dead process sent can still land after the lock was handed over", true
		}},
	{fault: history.KindClientPause, anomalies: []string{checker.KindStaleWrite, checker.KindOverlap, checker.KindNonLinearizable},
		explain: func(w faultView, a checker.Anomaly) (string, bool) {
			v, ok := decode[history.ClientPauseStart](w.Value, "process")
			if !ok {
				return "", false
			}
			if len(a.Processes) > 0 && !slices.Contains(a.Processes, v.Process) {
				return "", false
			}
			stalled := float64(v.MS) / 1000
			if w.End > w.Start && w.Starts == 1 {
				stalled = float64(w.End-w.Start) / 1e9 // the stall's own times, start to resume
			}
			who := fmt.Sprintf("stalled holder: process %d stood still %.1f s in its critical section (client-pause, %s – %s), past its lease",
				v.Process, stalled, secs(w.Start), secs(w.End))
			switch a.Kind {
			case checker.KindOverlap:
				return who + "; another client acquired the lock while it still believed it held it", true
			case checker.KindNonLinearizable:
				return who + "; another client acquired the expired lease, and the stalled holder's late write leaves the lock's operations no legal order", true
			default:
				return who + "; its write landed after another client had acquired the expired lease", true
			}
		}},
	{fault: history.KindClientClock, anomalies: []string{checker.KindOverlap, checker.KindNonLinearizable, checker.KindLostAdd, checker.KindStaleWrite},
		explain: func(w faultView, a checker.Anomaly) (string, bool) {
			v, ok := decode[history.ClientClockStart](w.Value, "client")
			if !ok || v.Offset == "" {
				return "", false
			}
			if strings.HasPrefix(v.Offset, "+") {
				return fmt.Sprintf("client %d's clock ran %s ahead (client-clock, --skew-ahead): a lock whose expiry is an instant "+
					"of the client's clock (ShedLock's lockUntil, Astyanax's lock column) found the holder's lock expired and took it "+
					"while the holder was inside", v.Client, strings.TrimPrefix(v.Offset, "+")), true
			}
			return fmt.Sprintf("client %d's clock was %s off (client-clock): a lock that orders requests by client time "+
				"(time-UUID refs, client write timestamps) can sort a later request first and grant it while the holder is inside; "+
				"one that writes its expiry as an instant of the client's clock (Astyanax's lock column) makes claims the others "+
				"count expired as soon as they are written", v.Client, strings.TrimPrefix(v.Offset, "+")), true
		}},
	{fault: history.KindClock, anomalies: []string{checker.KindOverlap, checker.KindStaleWrite, checker.KindLostAdd, checker.KindNonLinearizable},
		explain: func(w faultView, a checker.Anomaly) (string, bool) {
			v, ok := decode[history.ClockStart](w.Value)
			if !ok || len(v.Offsets) == 0 {
				return "", false
			}
			var parts []string
			for n, o := range v.Offsets {
				parts = append(parts, n+" "+o)
			}
			slices.Sort(parts)
			return "node clocks were moved (" + strings.Join(parts, ", ") + "): a coordinator whose clock runs ahead " +
				"expires a TTL lease on the server before the holder's deadline, and one behind stamps writes in the past", true
		}},
	{fault: history.KindCoordClock, anomalies: []string{checker.KindOverlap, checker.KindStaleWrite, checker.KindLostAdd, checker.KindNonLinearizable},
		explain: func(w faultView, a checker.Anomaly) (string, bool) {
			v, ok := decode[history.CoordClockStart](w.Value)
			if !ok || v.Node == "" || v.Offset == "" {
				return "", false
			}
			return fmt.Sprintf("the lease expired on the server before the holder's deadline: node %s, the coordinator of %s, "+
				"ran %s ahead (coord-clock), more than a %s lease has left, so a conditional write through it (IF NOT EXISTS, IF col = null) "+
				"found the holder's row or cell already expired and granted the lock again", v.Node, clientList(v.Clients), secondsText(v.Offset), v.Lease), true
		}},
	// The writes the cut kept from the other nodes stay missing there after
	// it, until hints or a read repair bring them: lasting. Only the
	// anomalies of two grants: a stale write or a lost add is also what a
	// write slowed by the cut past its lease shows, at any consistency
	// (the timeline's late write says that), and a lock at QUORUM or
	// SERIAL gets no second grant from the cut itself.
	{fault: history.KindCoordPartition, lasting: true, anomalies: []string{checker.KindOverlap, checker.KindNonLinearizable, checker.KindDuplicate, checker.KindTokenOrder},
		explain: func(w faultView, a checker.Anomaly) (string, bool) {
			v, ok := decode[history.CoordPartitionStart](w.Value)
			if !ok || v.Node == "" {
				return "", false
			}
			var others []string
			for n, cs := range v.Others {
				others = append(others, fmt.Sprintf("%s (%s)", n, clientList(cs)))
			}
			slices.Sort(others)
			return fmt.Sprintf("node %s, the coordinator of %s, could not reach %s (coord-partition): a lock that writes or reads "+
				"at a weak consistency level (ONE) through it misses what the other side wrote (during the cut, and after it until "+
				"hints or a repair delivered it), so both sides can take the lock", v.Node, clientList(v.Clients), strings.Join(others, ", ")), true
		}},
	// A grant one side made during the cut reaches the other side's
	// replicas only after it (hints, repair): lasting. Only the anomalies
	// of two grants: a stale write or a lost add is also what a write
	// slowed by the cut past its lease shows, at any consistency.
	{fault: history.KindDCPartition, lasting: true, anomalies: []string{checker.KindOverlap, checker.KindNonLinearizable, checker.KindDuplicate, checker.KindTokenOrder},
		explain: func(w faultView, a checker.Anomaly) (string, bool) {
			v, ok := decode[history.DCPartitionStart](w.Value)
			if !ok || len(v.DCs) < 2 {
				return "", false
			}
			var sides []string
			for _, dc := range slices.Sorted(maps.Keys(v.DCs)) {
				sides = append(sides, fmt.Sprintf("%s (%s)", dc, strings.Join(v.DCs[dc], ", ")))
			}
			how := "both ways"
			if v.Mode == "one-way" {
				how = "one way"
			}
			return fmt.Sprintf("data centres %s were cut apart (dc-partition, %s): an LWT at LOCAL_SERIAL runs its Paxos round "+
				"among its own data centre's replicas only, so a client in each data centre was granted the lock without "+
				"seeing the other's grant (SERIAL would have needed replicas across the cut)", strings.Join(sides, " and "), how), true
		}},
	{fault: history.KindJoin, anomalies: movementAnomalies, explain: explainMovement},
	{fault: history.KindLeave, anomalies: movementAnomalies, explain: explainMovement},
	{fault: history.KindReplace, anomalies: movementAnomalies, explain: explainMovement},
	{fault: history.KindRemove, anomalies: movementAnomalies, explain: explainMovement},
	{fault: history.KindPowerLoss, lasting: true, anomalies: powerAnomalies, explain: explainPower},
	{fault: history.KindRackPowerLoss, lasting: true, anomalies: powerAnomalies, explain: explainPower},
}, slownessRules...) // slowness.go

// movementAnomalies are what a lost Paxos state shows as: two grants.
var movementAnomalies = []string{checker.KindOverlap, checker.KindNonLinearizable, checker.KindDuplicate, checker.KindTokenOrder}

// explainMovement names the range movement of a membership window.
func explainMovement(w faultView, a checker.Anomaly) (string, bool) {
	v, ok := decode[history.MemberStart](w.Value)
	if !ok || v.Node == "" {
		return "", false
	}
	return fmt.Sprintf("ranges moved while the lock was taken: %s (%s, %s): a replica set that changes under an LWT can "+
		"miss a proposal accepted by the replicas it no longer holds (CEP-14: LWTs have never guaranteed linearizability "+
		"across range movements; Paxos v2 repairs Paxos state on topology changes unless skip_paxos_repair_on_topology_change)",
		v.Node, w.Kind, v.How), true
}

// powerAnomalies are what forgotten acknowledged writes show as: a lock row
// or fencing counter gone (a second holder, an old token again), the
// resource's own rows gone (a lost add, a stale token accepted).
var powerAnomalies = []string{checker.KindOverlap, checker.KindStaleWrite, checker.KindLostAdd, checker.KindNonLinearizable, checker.KindDuplicate, checker.KindTokenOrder}

func explainPower(w faultView, a checker.Anomaly) (string, bool) {
	v, ok := decode[history.PowerStart](w.Value)
	if !ok {
		return "", false
	}
	var nodes []string
	var lost int64
	for n, b := range v.UnsyncedBytes {
		nodes = append(nodes, n)
		lost += max(b, 0)
	}
	slices.Sort(nodes)
	return fmt.Sprintf("%s lost power at %.1f s (%s) holding %d bytes written and not yet fsynced: writes they had "+
		"acknowledged (lock rows, fencing counters, Paxos state, the resource's rows) were lost, so later operations "+
		"saw the lock as it had been before them", strings.Join(nodes, ", "), float64(w.Start)/1e9, w.Kind, lost), true
}

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
				return r.Explain(w.FaultWindow, faultkind.Anomaly{Kind: a.Kind, Processes: a.Processes})
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
