package history

import (
	"encoding/json"
	"strings"
)

// The fault-event vocabulary: every line the nemesis writes has process
// NemesisProcess and type info, and one of these names. A fault kind "K"
// (partition, pause, loss, ...) writes "start-K" when it takes effect and
// "stop-K" when it was undone; what happened is its value, an object whose
// fields are the kind's own (docs/history.md lists them). The vocabulary
// names no kind: a kind added later needs nothing here.
const (
	startPrefix = "start-"
	stopPrefix  = "stop-"
	failSuffix  = "-failed"

	// FHeal closes a run's faults: its value is "ok" or the errors of the
	// heal, and every node and client is back to its known state after it.
	FHeal = "heal"
	// FHealLeftover records a node that a command found still faulted by an
	// earlier process (killed before its heal) and reset; its value is a
	// HealLeftover.
	FHealLeftover = "heal-leftover"
)

// StartF is the name of the line that starts a fault of kind.
func StartF(kind string) string { return startPrefix + kind }

// StopF is the name of the line that stops a fault of kind.
func StopF(kind string) string { return stopPrefix + kind }

// StartFailedF is the name of the line of a fault of kind that did not
// start (value: the error); the schedule goes on.
func StartFailedF(kind string) string { return startPrefix + kind + failSuffix }

// FaultEvent parses a nemesis line's name: the kind and whether it starts or
// stops a fault. ok is false for every other line (meta, heal,
// heal-leftover, a failed start).
func FaultEvent(f string) (kind string, start, ok bool) {
	if strings.HasSuffix(f, failSuffix) {
		return "", false, false
	}
	if k, found := strings.CutPrefix(f, startPrefix); found && k != "" {
		return k, true, true
	}
	if k, found := strings.CutPrefix(f, stopPrefix); found && k != "" {
		return k, false, true
	}
	return "", false, false
}

// HealLeftover is the value of an FHealLeftover line.
type HealLeftover struct {
	Node   string   `json:"node"`
	Healed []string `json:"healed"` // the fault kinds found and undone
	// Found is what the node showed before the heal, in `lockcheck cluster
	// status` words ("container paused", "jvm stopped", "2 iptables rules",
	// "clock offset +5.000000", "container exited"), when the node can say;
	// a paused container hides the rest.
	Found []string `json:"found,omitempty"`
}

// FaultStyle is how reports draw a fault kind; the meta line carries one per
// kind the run may inject (Meta.Faults), so that a stored history is drawn
// the same way without the code that made it.
type FaultStyle struct {
	Color string `json:"color,omitempty"` // a CSS colour
}

// FaultWindow is the time a fault kind was in effect: from a start line to
// the stop that closes it. Faults of one kind may overlap (two nodes paused
// by two starts); their window lasts until the last of them stops.
type FaultWindow struct {
	Kind       string
	Start, End int64 // ns; End is the history's end for a fault never stopped
	Starts     int   // start lines merged into the window
	Nodes      []string
	Value      json.RawMessage // the first start line's value
}

// FaultWindows pairs the start and stop lines of ops (in history order) into
// windows, in order of their start; a window still open at the end closes
// at end.
func FaultWindows(ops []Op, end int64) []FaultWindow {
	type open struct{ at, n int }
	opened := map[string]*open{}
	var out []FaultWindow
	for i := range ops {
		op := &ops[i]
		if op.Process != NemesisProcess {
			continue
		}
		kind, start, ok := FaultEvent(op.F)
		if !ok {
			continue
		}
		o := opened[kind]
		switch {
		case start && o != nil:
			o.n++
			w := &out[o.at]
			w.Starts++
			w.Nodes = addNodes(w.Nodes, op.Node)
		case start:
			opened[kind] = &open{at: len(out), n: 1}
			out = append(out, FaultWindow{Kind: kind, Start: op.Time, End: end, Starts: 1, Nodes: addNodes(nil, op.Node), Value: op.Value})
		case o != nil:
			if o.n--; o.n == 0 {
				out[o.at].End = op.Time
				delete(opened, kind)
			}
		}
	}
	return out
}

func addNodes(nodes []string, list string) []string {
	if list == "" {
		return nodes
	}
	for _, n := range strings.Split(list, ",") {
		found := false
		for _, m := range nodes {
			found = found || m == n
		}
		if !found {
			nodes = append(nodes, n)
		}
	}
	return nodes
}
