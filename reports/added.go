package reports

import (
	"fmt"

	"github.com/lockcheck/lockcheck/history"
)

// What a slowness window added to the requests it slowed, for the page
// beside the operations' latency (issue 48): a reader compares the p99 line
// with the delay, the stall or the disk's wait the fault dealt, and sees
// whether the operations were slowed by the fault or by something else
// (the machine's load).

// addedWindow is one slowness window's added latency.
type addedWindow struct {
	faultView
	// MS is the latency it added to each request it slowed, in
	// milliseconds: a link's delay, a stall, a disk's wait per write. 0
	// when no one figure says it (a bandwidth limit, a CPU quota).
	MS int64
	// Text says it in words, with the kind, the times and what was
	// slowed: "gc-stall 3.000s – 6.200s: +2400 ms, n2's JVM stopped".
	Text string
}

// addedLatency is what each slowness window of faults added, in order;
// other kinds add nothing there.
func addedLatency(faults []faultView) []addedWindow {
	var out []addedWindow
	for _, w := range faults {
		if a, ok := addedBy(w); ok {
			out = append(out, a)
		}
	}
	return out
}

// addedBy is what slowness window w added; ok is false for other kinds and
// for a value it cannot read.
func addedBy(w faultView) (addedWindow, bool) {
	a := addedWindow{faultView: w}
	node := "a node"
	if len(w.Nodes) > 0 {
		node = w.Nodes[0]
	}
	var what string
	if v, ok := shapingOf(w); ok {
		a.MS, what = v.Shape.DelayMS, added(v.Shape)+" on "+links(v)
	} else {
		switch w.Kind {
		case history.KindGCStall, history.KindCoordGCStall:
			v, ok := decode[history.GCStallStart](w.Value, "ms")
			if !ok {
				return a, false
			}
			a.MS, what = v.MS, fmt.Sprintf("+%d ms, %s's JVM stopped", v.MS, node)
		case history.KindClientGCStall:
			v, ok := decode[history.ClientStallStart](w.Value, "process")
			if !ok {
				return a, false
			}
			a.MS, what = v.MS, fmt.Sprintf("+%d ms, client %d (process %d) stopped between its read and its write", v.MS, v.Client, v.Process)
		case history.KindSlowDisk:
			v, ok := decode[history.SlowDiskValue](w.Value, "latency_ms")
			if !ok {
				return a, false
			}
			a.MS, what = v.LatencyMS, fmt.Sprintf("+%d ms on every write and fsync of %s's disk", v.LatencyMS, node)
		case history.KindSlowNode:
			v, ok := decode[history.SlowNodeStart](w.Value, "cpu")
			if !ok {
				return a, false
			}
			what = fmt.Sprintf("%s held to %s of a core (no one figure: what it serves runs many times slower)", node, percent(v.CPU))
		case history.KindCoordSlowNode:
			v, ok := decode[history.CoordSlowNodeStart](w.Value, "cpu")
			if !ok || v.Node == "" {
				return a, false
			}
			what = fmt.Sprintf("%s, the coordinator of %s, held to %s of a core (no one figure: its requests run many times slower)",
				v.Node, clientList(v.Clients), percent(v.CPU))
		default:
			return a, false
		}
	}
	a.Text = fmt.Sprintf("%s %s – %s: %s", w.Kind, secs(w.Start), secs(w.End), what)
	return a, true
}
