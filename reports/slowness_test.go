package reports

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// A write that outlived its lease under a slowness window: the cause names
// the node or process slowed and by how much, in the late write's account
// and in the window's own sentence; a window that slowed another process,
// or another coordinator's clients, is not named.
func TestSlownessCauses(t *testing.T) {
	op := func(idx int64, at float64, p int, typ history.Type, f string, leaseMS int64) history.Op {
		return history.Op{Index: idx, Time: ms(at), Process: p, Type: typ, F: f, Lock: "l", LeaseMS: leaseMS, Value: json.RawMessage(`5`)}
	}
	// Process 1 holds to 3 s and sends an add at 2.5 s that returns at
	// 4.2 s; process 2 is granted at 3.5 s.
	ops := []history.Op{
		op(1, 0, 1, history.Invoke, history.FAcquire, 0), op(2, 100, 1, history.OK, history.FAcquire, 3000),
		op(3, 2000, 2, history.Invoke, history.FAcquire, 0), op(4, 2500, 1, history.Invoke, history.FAdd, 0),
		op(5, 3500, 2, history.OK, history.FAcquire, 3000), op(6, 4200, 1, history.OK, history.FAdd, 0),
	}
	stale := checker.Anomaly{Kind: checker.KindStaleWrite, Lock: "l", Processes: []int{1, 2}, Start: ms(3000), End: ms(4200), Ops: ops}
	window := func(kind, value string, nodes ...string) faultView {
		return faultView{FaultWindow: history.FaultWindow{Kind: kind, Start: ms(2000), End: ms(5000), Starts: 1, Nodes: nodes, Value: json.RawMessage(value)}}
	}
	for _, tc := range []struct {
		name string
		w    faultView
		tl   *causeTimeline
		want []string
		not  []string
	}{
		{"slow-node", window(history.KindSlowNode, `{"cpu":0.05}`, "n2"), nil,
			[]string{"a write outlived its lease", "node n2 was starved to 5 % of a core (slow-node, 2.000s – 5.000s)"}, []string{noFault}},
		{"coord-slow-node", window(history.KindCoordSlowNode, `{"cpu":0.02,"clients":[1],"node":"n3"}`, "n3"), newCauseTimeline(ops, numbered(5, ""), nil),
			[]string{"node n3, the coordinator of client 1, was starved to 2 % of a core"}, []string{noFault}},
		{"coord-slow-node of other clients", window(history.KindCoordSlowNode, `{"cpu":0.02,"clients":[4],"node":"n3"}`, "n3"), newCauseTimeline(ops, numbered(5, ""), nil),
			[]string{"no fault window open"}, []string{"starved"}},
		{"slow-disk", window(history.KindSlowDisk, `{"latency_ms":250}`, "n1"), nil,
			[]string{"node n1's disk waited 250 ms on every write and fsync (slow-disk, 2.000s – 5.000s)"}, []string{noFault}},
		{"gc-stall", window(history.KindGCStall, `{"ms":1200}`, "n2"), nil,
			[]string{"node n2's JVM stood still 1200 ms in a stop-the-world stall (gc-stall, 2.000s – 5.000s)"}, []string{noFault}},
		{"coord-gc-stall", window(history.KindCoordGCStall, `{"clients":[1,4],"ms":3800}`, "n2"), newCauseTimeline(ops, numbered(5, ""), nil),
			[]string{"node n2, the coordinator of clients 1, 4, stood still 3800 ms"}, []string{noFault}},
		{"client-gc-stall of the writer", window(history.KindClientGCStall, `{"client":1,"lock":"l","ms":1500,"process":1}`), nil,
			[]string{"client 1 (process 1) stood still 1500 ms between its read and its write (client-gc-stall"}, []string{noFault}},
		{"client-gc-stall of another process", window(history.KindClientGCStall, `{"client":3,"lock":"l","ms":1500,"process":3}`), nil,
			[]string{"no fault window open"}, []string{"stood still"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.tl == nil {
				// No history at hand but the anomaly's own operations:
				// the checker's grants of those.
				tc.tl = newCauseTimeline(stale.Ops, nil, nil)
			}
			got := likelyCause(stale, []faultView{tc.w}, tc.tl)
			if text, ok := slownessText(tc.w); ok && strings.Count(got, text) > 1 {
				t.Errorf("cause %q names the window twice", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("cause %q lacks %q", got, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(got, w) {
					t.Errorf("cause %q has %q", got, w)
				}
			}
		})
	}
}
