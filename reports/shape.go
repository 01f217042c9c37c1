package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/history"
)

// The shaping kinds (net-delay, coord-net-delay, net-rate) make requests
// slow: their windows say how much latency they added, and on which links,
// so that the report shows it beside the operations' latency and the causes
// name the slowed link.

// isShaping says whether a window is one of the shaping kinds'.
func isShaping(kind string) bool {
	return kind == history.KindNetDelay || kind == history.KindCoordNetDelay || kind == history.KindNetRate
}

// shapingOf is a shaping window's start value.
func shapingOf(w faultView) (history.ShapeStart, bool) {
	if !isShaping(w.Kind) {
		return history.ShapeStart{}, false
	}
	v, ok := decode[history.ShapeStart](w.Value)
	return v, ok && len(v.Links) > 0
}

// added is the shaping in words: "+450 ms ±30 ms", "256 kbit/s".
func added(s history.Shaping) string {
	var parts []string
	if s.DelayMS > 0 {
		p := fmt.Sprintf("+%d ms", s.DelayMS)
		if s.JitterMS > 0 {
			p += fmt.Sprintf(" ±%d ms", s.JitterMS)
		}
		parts = append(parts, p)
	}
	if s.RateKbit > 0 {
		parts = append(parts, fmt.Sprintf("at most %d kbit/s", s.RateKbit))
	}
	return strings.Join(parts, ", ")
}

// links names the shaped links: "n2's links to the clients, n1, n3".
func links(v history.ShapeStart) string {
	var out []string
	for _, n := range slices.Sorted(mapKeys(v.Links)) {
		peers := slices.Clone(v.Links[n])
		for i, p := range peers {
			if p == "clients" {
				peers[i] = "the clients"
			}
		}
		out = append(out, fmt.Sprintf("%s's links to %s", n, strings.Join(peers, ", ")))
	}
	return strings.Join(out, "; ")
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// slowedBy is the sentence of a shaping window that slowed a request sent
// (any client's: a slowed coordinator is also a replica, whose answers to
// every other coordinator wait too, so coord-net-delay is not only its own
// clients' cause)
// at inv and answered at ret by process p, where one delayed it: "the add
// sent at 3.2 s was delayed 450 ms (±30 ms) on n2's links to n1, n3
// (net-delay, 1.2 s – 5.0 s)"; "" when no shaping window was open.
func slowedBy(faults []faultView, f string, inv, ret int64) string {
	for _, w := range faults {
		v, ok := shapingOf(w)
		if !ok || w.Start > ret || effectEnd(w) < inv {
			continue
		}
		how := fmt.Sprintf("delayed %d ms", v.Shape.DelayMS)
		if v.Shape.JitterMS > 0 {
			how += fmt.Sprintf(" (±%d ms)", v.Shape.JitterMS)
		}
		if v.Shape.DelayMS == 0 {
			how = fmt.Sprintf("held to %d kbit/s", v.Shape.RateKbit)
		}
		return fmt.Sprintf("the %s sent at %s was %s on %s (%s, %s – %s)", f, secs(inv), how, links(v), w.Kind, secs(w.Start), secs(w.End))
	}
	return ""
}
