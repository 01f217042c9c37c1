package reports

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// faultView is a fault window as the plots draw it: the history's window,
// in its kind's colour.
type faultView struct {
	history.FaultWindow
	Color string
	value string // the start line's value, shortened
}

// mark is an instant nemesis line: a failed start, a heal, a leftover heal.
type mark struct {
	name  string
	at    int64
	value string
}

type legendItem struct {
	Kind, Color string
	Windows     int
}

// fallbackColors draw kinds a history's meta line gives no style for (a
// history from another producer, or older than the styles).
var fallbackColors = []string{"#f28e2b", "#4e79a7", "#b07aa1", "#59a14f", "#76b7b2", "#edc948", "#e15759", "#9c755f"}

// faultColor is the kind's colour from the meta line, or one derived from
// its name, so that a kind keeps its colour across reports.
func faultColor(kind string, meta *history.Meta) string {
	if meta != nil {
		if st, ok := meta.Faults[kind]; ok && st.Color != "" {
			return st.Color
		}
	}
	h := fnv.New32a()
	h.Write([]byte(kind))
	return fallbackColors[h.Sum32()%uint32(len(fallbackColors))]
}

func shorten(v json.RawMessage) string {
	s := string(v)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// faultViews are the run's fault windows (history.FaultWindows) coloured by
// kind, and its other nemesis lines as marks.
func faultViews(ops []history.Op, meta *history.Meta, end int64) ([]faultView, []mark) {
	var views []faultView
	for _, w := range history.FaultWindows(ops, end) {
		views = append(views, faultView{FaultWindow: w, Color: faultColor(w.Kind, meta), value: shorten(w.Value)})
	}
	var marks []mark
	for i := range ops {
		op := &ops[i]
		if op.Process != history.NemesisProcess || op.F == history.FMeta || op.F == history.FPhases {
			continue
		}
		if _, _, ok := history.FaultEvent(op.F); ok || len(marks) >= 2000 {
			continue
		}
		marks = append(marks, mark{name: op.F, at: op.Time, value: shorten(op.Value)})
	}
	return views, marks
}

// legend lists each kind once, in order of its first window.
func legend(faults []faultView) []legendItem {
	var out []legendItem
	at := map[string]int{}
	for _, f := range faults {
		i, ok := at[f.Kind]
		if !ok {
			i = len(out)
			at[f.Kind] = i
			out = append(out, legendItem{Kind: f.Kind, Color: f.Color})
		}
		out[i].Windows++
	}
	return out
}

// faultRects shades each window over a plot from y, h high, in its kind's
// colour; labelled windows carry the kind's name where there is room.
func faultRects(faults []faultView, end int64, y, h float64, labelled bool) []rect {
	var out []rect
	for _, f := range faults {
		x0, x1 := xOf(f.Start, end), xOf(f.End, end)
		r := rect{X: x0, Y: y, W: math.Max(x1-x0, 1), H: h, Fill: f.Color,
			Title: fmt.Sprintf("%s %s – %s %s %s", f.Kind, secs(f.Start), secs(f.End), joinNodes(f.Nodes), f.value)}
		if labelled && r.W >= 6*float64(len(f.Kind)) {
			r.Label = f.Kind
		}
		out = append(out, r)
	}
	return out
}

func joinNodes(nodes []string) string {
	if len(nodes) == 0 {
		return ""
	}
	return fmt.Sprint(nodes)
}

// faultAnnotations are the fault windows as porcupine annotations, one row
// ("nemesis") in each kind's colour.
func faultAnnotations(faults []faultView) []porcupine.Annotation {
	out := make([]porcupine.Annotation, 0, len(faults))
	for _, f := range faults {
		out = append(out, porcupine.Annotation{Tag: "nemesis", Start: f.Start, End: f.End, Description: f.Kind,
			Details:         fmt.Sprintf("%s %s – %s %s %s", f.Kind, secs(f.Start), secs(f.End), joinNodes(f.Nodes), f.value),
			BackgroundColor: f.Color})
	}
	return out
}

// activeFault is a fault window named beside an anomaly.
type activeFault struct {
	Kind, Color, Text string
}

// activeFaults are the windows that overlap [start, end] (end checker.Never:
// open), so that an anomaly says which faults were in effect around it.
func activeFaults(faults []faultView, start, end int64) []activeFault {
	var out []activeFault
	for _, f := range faults {
		if f.End < start || (end != checker.Never && f.Start > end) {
			continue
		}
		out = append(out, activeFault{Kind: f.Kind, Color: f.Color,
			Text: strings.TrimSpace(fmt.Sprintf("%s – %s %s", secs(f.Start), secs(f.End), joinNodes(f.Nodes)))})
	}
	return out
}

// faultRow is a fault window as the report's table of windows lists it.
type faultRow struct {
	Kind, Color, Nodes, From, To, Length, Detail string
}

// maxFaultRows bounds the table: a run of hours deals thousands of windows,
// which the timeline and history.jsonl still hold.
const maxFaultRows = 200

// faultRows are the windows in order of their start, at most maxFaultRows
// (more: those left out). A membership window says what moved and when,
// read from its start and stop lines; any other window shows the values
// its lines recorded.
func faultRows(faults []faultView) (rows []faultRow, more int) {
	for i, f := range faults {
		if i == maxFaultRows {
			return rows, len(faults) - i
		}
		r := faultRow{Kind: f.Kind, Color: f.Color, Nodes: strings.Join(f.Nodes, ", "), From: secs(f.Start), To: secs(f.End),
			Length: fmt.Sprintf("%.1fs", float64(f.End-f.Start)/1e9)}
		if !f.Closed {
			r.To += " (still in effect at the end)"
		}
		if d, ok := movementDetail(f); ok {
			r.Detail = d
		} else {
			r.Detail = f.value
			if stop := strings.TrimSpace(string(f.Stop)); stop != "" && stop != "null" && stop != "{}" && stop != `"ok"` {
				r.Detail += "; stop: " + shorten(f.Stop)
			}
		}
		rows = append(rows, r)
	}
	return rows, 0
}

// movementDetail reads a membership window (history.MemberStart and
// MemberStop) as a sentence: the node, the movements, when the first one's
// streaming was done and the ring then, when the node was back, and what
// failed or was completed on the way.
func movementDetail(f faultView) (string, bool) {
	start, ok := decode[history.MemberStart](f.Value, "node", "how")
	if !ok {
		return "", false
	}
	parts := []string{fmt.Sprintf("%s: %s; ring before: %s", start.Node, start.How, ringText(start.Ring))}
	if stop, ok := decode[history.MemberStop](f.Stop, "node"); ok {
		if stop.WaitedMS > 0 {
			parts = append(parts, fmt.Sprintf("waited %.1fs for the ring to be whole", float64(stop.WaitedMS)/1e3))
		}
		if stop.StreamedMS > 0 {
			parts = append(parts, fmt.Sprintf("streaming done %.1fs in (ring then: %s)", float64(stop.StreamedMS)/1e3, ringText(stop.Moved)))
		}
		if len(stop.Resumed) > 0 {
			parts = append(parts, "completed after a failure: "+strings.Join(stop.Resumed, "; "))
		}
		if stop.Error != "" {
			parts = append(parts, "did not complete: "+stop.Error)
		}
		parts = append(parts, fmt.Sprintf("ring after (%.1fs in): %s", float64(stop.MS)/1e3, ringText(stop.Ring)))
	}
	return strings.Join(parts, "; "), true
}

// ringText is a ring as "n1 UN, n2 UN, n5 UJ", in node order.
func ringText(ring map[string]string) string {
	if len(ring) == 0 {
		return "unknown"
	}
	nodes := slices.Sorted(maps.Keys(ring))
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n + " " + ring[n]
	}
	return strings.Join(out, ", ")
}
