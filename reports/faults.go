package reports

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
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
