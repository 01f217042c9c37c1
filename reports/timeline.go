package reports

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/lockcheck/lockcheck/checker"
)

// timeline is the SVG of holds per row, fault windows and anomalies.
type timeline struct {
	Height, PlotH float64
	Rows          []tlRow
	Faults        []rect
	Marks         []rect // instant nemesis events
	Anomalies     []rect
	Ticks         []tick
	Note          string
}

type tlRow struct {
	Label string
	Full  string
	Y     float64
	Bars  []rect
}

type rect struct {
	X, Y, W, H float64
	Fill       string
	Title      string
	Href       string
	Label      string
}

type tick struct {
	X     float64
	Label string
}

func xOf(t, end int64) float64 {
	if t == checker.Never || t > end {
		t = end
	}
	return plotLeft + float64(t)/float64(end)*plotWidth
}

var palette = []string{"#4e79a7", "#59a14f", "#9c755f", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#bab0ac", "#86bcb6", "#8cd17d"}

func newTimeline(holds []checker.Hold, faults []faultView, marks []mark, anomalies []checker.Anomaly, end int64) timeline {
	tl := timeline{}
	// Rows: (lock, process) when few, else one per lock, the locks with
	// anomalies first, then the busiest.
	type key struct {
		lock string
		proc int
	}
	perPair := map[key][]checker.Hold{}
	perLock := map[string][]checker.Hold{}
	for _, h := range holds {
		perPair[key{h.Lock, h.Process}] = append(perPair[key{h.Lock, h.Process}], h)
		perLock[h.Lock] = append(perLock[h.Lock], h)
	}
	bad := map[string]bool{}
	for _, a := range anomalies {
		bad[a.Lock] = true
	}
	type row struct {
		label string
		lock  string
		proc  int
		holds []checker.Hold
	}
	var rows []row
	badProc := map[key]bool{}
	for _, a := range anomalies {
		for _, p := range a.Processes {
			badProc[key{a.Lock, p}] = true
		}
	}
	if len(perPair) <= maxRows || len(perLock) <= 6 {
		// Few locks: a row per (lock, process), those in anomalies first,
		// then the busiest.
		for k, hs := range perPair {
			rows = append(rows, row{label: fmt.Sprintf("%s · p%d", k.lock, k.proc), lock: k.lock, proc: k.proc, holds: hs})
		}
		if len(rows) > maxRows {
			sort.Slice(rows, func(i, j int) bool {
				bi, bj := badProc[key{rows[i].lock, rows[i].proc}], badProc[key{rows[j].lock, rows[j].proc}]
				if bi != bj {
					return bi
				}
				if len(rows[i].holds) != len(rows[j].holds) {
					return len(rows[i].holds) > len(rows[j].holds)
				}
				return rows[i].proc < rows[j].proc
			})
			tl.Note = fmt.Sprintf("%d (lock, process) pairs held a lock: the %d shown are those in anomalies, then the busiest.", len(rows), maxRows)
			rows = rows[:maxRows]
		}
		sort.Slice(rows, func(i, j int) bool {
			if rows[i].lock != rows[j].lock {
				return rows[i].lock < rows[j].lock
			}
			return rows[i].proc < rows[j].proc
		})
	} else {
		for l, hs := range perLock {
			rows = append(rows, row{label: l, lock: l, proc: -1, holds: hs})
		}
		sort.Slice(rows, func(i, j int) bool {
			if bad[rows[i].lock] != bad[rows[j].lock] {
				return bad[rows[i].lock]
			}
			if len(rows[i].holds) != len(rows[j].holds) {
				return len(rows[i].holds) > len(rows[j].holds)
			}
			return rows[i].lock < rows[j].lock
		})
		if len(rows) > maxRows {
			tl.Note = fmt.Sprintf("%d locks: the %d shown are those with anomalies, then the busiest; each row is one lock, coloured by holder.", len(rows), maxRows)
			rows = rows[:maxRows]
		} else {
			tl.Note = "Each row is one lock, coloured by holder."
		}
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].lock < rows[j].lock })
	}
	// A run's lock names share its test name and run ("lease-partition-
	// 20261129T033658-l0"): the labels show what tells them apart, and
	// the note says the rest once, so that a long name never cuts the
	// label down to its tail alone.
	var names []string
	for _, r := range rows {
		names = append(names, r.lock)
	}
	prefix := lockPrefix(names)
	if prefix != "" {
		tl.Note = strings.TrimSpace(tl.Note + " Lock names begin with " + prefix + ".")
	}
	tl.PlotH = math.Max(float64(len(rows))*rowHeight, rowHeight)
	tl.Height = tl.PlotH + 40
	nsPerPx := float64(end) / plotWidth
	lockY := map[string][]float64{}
	for i, r := range rows {
		y := 20 + float64(i)*rowHeight
		tr := tlRow{Label: strings.TrimPrefix(r.label, prefix), Full: r.label, Y: y}
		if rs := []rune(tr.Label); len(rs) > 26 {
			tr.Label = string(rs[:12]) + "…" + string(rs[len(rs)-13:])
		}
		lockY[r.lock] = append(lockY[r.lock], y)
		sort.Slice(r.holds, func(i, j int) bool { return r.holds[i].Start < r.holds[j].Start })
		// Holds closer than a pixel merge into one bar, so a long run stays
		// a few hundred shapes per row.
		for j := 0; j < len(r.holds); {
			h := r.holds[j]
			s, e, n := h.Start, h.End, 1
			procs := map[int]bool{h.Process: true}
			k := j + 1
			for ; k < len(r.holds) && float64(r.holds[k].Start-e) < nsPerPx; k++ {
				e = max(e, r.holds[k].End)
				procs[r.holds[k].Process] = true
				n++
			}
			// Not p mod the palette: processes are numbered per client, and
			// a client's replacement must not take its predecessor's colour.
			color := palette[(h.Process+h.Process/len(palette))%len(palette)]
			title := fmt.Sprintf("p%d holds %s from %s to %s (%s)", h.Process, h.Lock, secs(s), secs(h.End), h.Ended)
			if n > 1 {
				title = fmt.Sprintf("%d holds of %s by %d processes, %s – %s", n, h.Lock, len(procs), secs(s), secs(e))
				if len(procs) > 1 {
					color = "#7f8c8d"
				}
			}
			x0, x1 := xOf(s, end), xOf(e, end)
			tr.Bars = append(tr.Bars, rect{X: x0, Y: y + 2, W: math.Max(x1-x0, 0.8), H: rowHeight - 4, Fill: color, Title: title})
			j = k
		}
		tl.Rows = append(tl.Rows, tr)
	}
	tl.Faults = faultRects(faults, end, 18, tl.PlotH+4, true)
	for _, m := range marks {
		tl.Marks = append(tl.Marks, rect{X: xOf(m.at, end), Y: 18, H: tl.PlotH + 4,
			Title: fmt.Sprintf("%s at %s %s", m.name, secs(m.at), m.value)})
	}
	for i, a := range anomalies {
		if i == maxAnoShow {
			break
		}
		x0, x1 := xOf(a.Start, end), xOf(a.End, end)
		ys := lockY[a.Lock]
		if len(ys) == 0 {
			ys = []float64{20}
		}
		y0, y1 := ys[0], ys[len(ys)-1]+rowHeight
		if len(lockY[a.Lock]) == 0 {
			y1 = 20 + tl.PlotH
		}
		tl.Anomalies = append(tl.Anomalies, rect{X: x0 - 1, Y: y0, W: math.Max(x1-x0, 1) + 2, H: y1 - y0,
			Title: fmt.Sprintf("#%d %s: %s", i+1, a.Kind, a.Message), Href: fmt.Sprintf("#anomaly-%d", i+1), Label: fmt.Sprint(i + 1)})
	}
	tl.Ticks = timeTicks(end, tl.Height-8)
	return tl
}

func timeTicks(end int64, y float64) []tick {
	span := float64(end) / 1e9
	step := math.Pow(10, math.Floor(math.Log10(math.Max(span, 1e-9)/8)))
	for _, m := range []float64{1, 2, 5, 10} {
		if span/(step*m) <= 10 {
			step *= m
			break
		}
	}
	var ts []tick
	for s := 0.0; s <= span+1e-12; s += step {
		ts = append(ts, tick{X: plotLeft + s/span*plotWidth, Label: trimFloat(s) + "s"})
		if len(ts) > 12 {
			break
		}
	}
	_ = y
	return ts
}

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.3f", f)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// lockPrefix is the part the lock names share up to their last dash
// ("" for one name with no dash, or names that share nothing).
func lockPrefix(names []string) string {
	if len(names) == 0 {
		return ""
	}
	p := names[0]
	for _, n := range names[1:] {
		for !strings.HasPrefix(n, p) {
			p = p[:len(p)-1]
		}
	}
	if i := strings.LastIndexByte(p, '-'); i >= 0 {
		return p[:i+1]
	}
	return ""
}
