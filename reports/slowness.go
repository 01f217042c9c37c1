package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/faultkind"
	"github.com/lockcheck/lockcheck/history"
)

// The slowness kinds' causes (issue 48): each names the node or process
// slowed and by how much. Their mechanism is a request slowed past its
// lease, so they explain the anomalies of a write or a renewal that landed
// late; the timeline's late write (lateWrite) lists their windows, with
// the same words, among those open while it was in flight.

// slownessAnomalies are what a request slowed past its lease shows as.
var slownessAnomalies = []string{checker.KindStaleWrite, checker.KindOverlap, checker.KindLostAdd, checker.KindNonLinearizable}

// lateRequest is the mechanism every slowness cause ends with.
const lateRequest = ": a request sent inside the lease can be answered after it ran out, and a write that lands after the next grant " +
	"is a stale holder's unless the resource checks a token"

var slownessRules = []causeRule{
	{fault: history.KindSlowNode, anomalies: slownessAnomalies, explain: explainSlowness},
	{fault: history.KindCoordSlowNode, anomalies: slownessAnomalies, explain: explainSlowness},
	{fault: history.KindSlowDisk, anomalies: slownessAnomalies, explain: explainSlowness},
	{fault: history.KindGCStall, anomalies: slownessAnomalies, explain: explainSlowness},
	{fault: history.KindCoordGCStall, anomalies: slownessAnomalies, explain: explainSlowness},
	{fault: history.KindClientGCStall, anomalies: slownessAnomalies, explain: func(w faultView, a checker.Anomaly) (string, bool) {
		v, ok := decode[history.ClientStallStart](w.Value, "process")
		if !ok || len(a.Processes) > 0 && !slices.Contains(a.Processes, v.Process) {
			return "", false
		}
		s, _ := slownessText(w)
		return s + ": its write landed that much later, after its lease when the lease had less left, as a GC pause between " +
			"a lease check and a write makes it", true
	}},
}

func explainSlowness(w faultView, _ checker.Anomaly) (string, bool) {
	s, ok := slownessText(w)
	if !ok {
		return "", false
	}
	return s + lateRequest, true
}

// slownessText says what a slowness window did, naming the node or the
// process and by how much, with its times; ok is false for other kinds and
// for a value it cannot read.
func slownessText(w faultView) (string, bool) {
	node := "a node"
	if len(w.Nodes) > 0 {
		node = "node " + w.Nodes[0]
	}
	when := fmt.Sprintf("%s – %s", secs(w.Start), secs(w.End))
	switch w.Kind {
	case history.KindSlowNode:
		v, ok := decode[history.SlowNodeStart](w.Value, "cpu")
		if !ok {
			return "", false
		}
		return fmt.Sprintf("%s was starved to %s of a core (slow-node, %s): every request it coordinated or served "+
			"as a replica ran many times slower", node, percent(v.CPU), when), true
	case history.KindCoordSlowNode:
		v, ok := decode[history.CoordSlowNodeStart](w.Value, "cpu")
		if !ok || v.Node == "" {
			return "", false
		}
		return fmt.Sprintf("node %s, the coordinator of %s, was starved to %s of a core (coord-slow-node, %s): their "+
			"requests ran many times slower", v.Node, clientList(v.Clients), percent(v.CPU), when), true
	case history.KindSlowDisk:
		v, ok := decode[history.SlowDiskValue](w.Value, "latency_ms")
		if !ok {
			return "", false
		}
		return fmt.Sprintf("%s's disk waited %d ms on every write and fsync (slow-disk, %s): with the commitlog synced "+
			"per write, each write it acknowledged (a Paxos promise, accept, commit) came that much later", node, v.LatencyMS, when), true
	case history.KindGCStall:
		v, ok := decode[history.GCStallStart](w.Value, "ms")
		if !ok {
			return "", false
		}
		return fmt.Sprintf("%s's JVM stood still %d ms in a stop-the-world stall (gc-stall, %s): what it coordinated or "+
			"served meanwhile was answered that much later", node, v.MS, when), true
	case history.KindCoordGCStall:
		v, ok := decode[history.GCStallStart](w.Value, "ms")
		if !ok {
			return "", false
		}
		return fmt.Sprintf("%s, the coordinator of %s, stood still %d ms in a stop-the-world stall of its JVM (coord-gc-stall, %s): "+
			"their requests were answered that much later", node, clientList(v.Clients), v.MS, when), true
	case history.KindClientGCStall:
		v, ok := decode[history.ClientStallStart](w.Value, "process")
		if !ok {
			return "", false
		}
		return fmt.Sprintf("client %d (process %d) stood still %d ms between its read and its write (client-gc-stall, %s)",
			v.Client, v.Process, v.MS, when), true
	}
	return "", false
}

// percent is a share of a core as the causes say it: "5 %".
func percent(share float64) string { return faultkind.Percent(share) }

// slownessNamed says whether a cause already names slowness window w (the
// late write's account lists the windows open while it was in flight, in
// slownessText's words): its rule would say it again.
func slownessNamed(causes []string, w faultView) bool {
	text, ok := slownessText(w)
	return ok && slices.ContainsFunc(causes, func(c string) bool { return strings.Contains(c, text) })
}

// heldBy is the sentence of a slowness window aimed at process p's own
// coordinator (coord-gc-stall, coord-slow-node: p's client pinned there)
// that was open while p's request, sent at inv and answered at ret, was in
// flight: with pinned clients the request went through that node, so the
// window is what held it. "the add sent at 3.200s was held 3800 ms in n2's
// stalled JVM (n2 coordinates clients 1, 4; coord-gc-stall, 3.4s – 7.2s)";
// "" when no such window was open or p's client is not known.
func heldBy(faults []faultView, f string, inv, ret int64, p int, tl *causeTimeline) string {
	c, known := tl.clientOf(p)
	if !known {
		return ""
	}
	for _, w := range faults {
		if w.Start > ret || effectEnd(w) < inv {
			continue
		}
		aimed, ok := pinnedTo(w)
		if !ok || !slices.Contains(aimed, c) {
			continue
		}
		when := fmt.Sprintf("%s – %s", secs(w.Start), secs(w.End))
		switch w.Kind {
		case history.KindCoordGCStall:
			v, ok := decode[history.GCStallStart](w.Value, "ms")
			if !ok || len(w.Nodes) == 0 {
				continue
			}
			return fmt.Sprintf("the %s sent at %s was held %d ms in %s's stalled JVM (%s coordinates %s; coord-gc-stall, %s)",
				f, secs(inv), v.MS, w.Nodes[0], w.Nodes[0], clientList(v.Clients), when)
		case history.KindCoordSlowNode:
			v, ok := decode[history.CoordSlowNodeStart](w.Value, "cpu")
			if !ok || v.Node == "" {
				continue
			}
			return fmt.Sprintf("the %s sent at %s went through %s, starved to %s of a core (%s coordinates %s; coord-slow-node, %s)",
				f, secs(inv), v.Node, percent(v.CPU), v.Node, clientList(v.Clients), when)
		}
	}
	return ""
}

// slowCoordinator says how a slowness window aimed at process p's own
// coordinator (coord-net-delay, coord-slow-node, coord-gc-stall: p's client
// pinned there) can have let the server expire p's lease before the
// lease p counted: the lock's extend or renew through that node came back
// late or timed out, and a lock that keeps its lease by its own reckoning
// (from the last reply, or from a send) then outlives the row, which
// Cassandra expires in whole seconds from its last write. "" when w is not
// such a window or p's client is not known to be pinned there.
func slowCoordinator(w faultView, p int, tl *causeTimeline) string {
	c, known := tl.clientOf(p)
	if !known {
		return ""
	}
	const reckoning = ": a renewal through it came back late or timed out, and a lock that keeps its lease by its own reckoning " +
		"(from its last confirmed renewal) outlives the row, which Cassandra expires in whole seconds from its last write"
	when := fmt.Sprintf("%s – %s", secs(w.Start), secs(w.End))
	if v, ok := shapingOf(w); ok && w.Kind == history.KindCoordNetDelay {
		if !slices.Contains(v.Clients, c) || v.Node == "" {
			return ""
		}
		return fmt.Sprintf("slowed coordinator: everything %s, the coordinator of %s, sent was %s (coord-net-delay, %s)",
			v.Node, clientList(v.Clients), strings.TrimPrefix(added(v.Shape), "+")+" late", when) + reckoning
	}
	if aimed, ok := pinnedTo(w); !ok || !slices.Contains(aimed, c) {
		return ""
	}
	switch w.Kind {
	case history.KindCoordSlowNode, history.KindCoordGCStall:
		if s, ok := slownessText(w); ok {
			return "slowed coordinator: " + s + reckoning
		}
	}
	return ""
}
