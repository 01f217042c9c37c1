package reports

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// Sizes of the report's plots (SVG user units).
const (
	plotLeft   = 150.0
	plotWidth  = 1000.0
	svgWidth   = plotLeft + plotWidth + 20
	rowHeight  = 14.0
	maxRows    = 60
	buckets    = 200
	chartH     = 160.0
	maxOpsShow = 40 // ops shown per anomaly
	maxAnoShow = 50 // anomalies shown in full
	maxPerKind = 10 // of one kind
)

// page is everything report.html shows. Strings from the history reach the
// HTML only through html/template, which escapes them.
type page struct {
	Dir       string
	Title     string
	Result    checker.Result
	Meta      *history.Meta
	Config    [][2]string
	Anomalies []anomalyView
	Kinds     []kindCount
	More      int // anomalies not shown in full
	Findings  []anomalyView
	Timeline  timeline
	Latency   chart
	Vis       []visLink
	ByF       []fRow
	ByProcess []pRow
	MoreProcs int
	Files     []string
	Events    int
	End       string
}

type kindCount struct {
	Kind        string
	Shown, More int
}

type anomalyView struct {
	N         int
	A         checker.Anomaly
	Window    string
	Ops       []opRow
	MoreOps   int
	Processes string
}

type opRow struct {
	Index                          int64
	Time, Process, Type, F, Lock   string
	Value, Lease, Node, Error, Cls string
	FullValue                      string
}

type fRow struct {
	F             string
	C             checker.Counts
	OK, All       checker.Latency
	HasOK, HasAll bool
}

type pRow struct {
	Process int
	C       checker.Counts
}

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

// chart is latency over time and throughput, with fault shading.
type chart struct {
	Height         float64
	P50, P99, Max  string // polyline points
	YTicks         []tick // X holds the y coordinate
	Bars           []rect
	TTicks         []tick // throughput axis, X holds y
	Faults         []rect
	Ticks          []tick
	ThroughputTop  float64
	LatencyTop     float64
	ThroughputBase float64
	LatencyBase    float64
	Empty          bool
}

func newPage(dir string, ops []history.Op, res checker.Result, vis []visLink) *page {
	p := &page{Dir: dir, Result: res, Meta: res.Meta, Vis: vis, Events: len(ops)}
	p.Title = filepath.Base(filepath.Dir(dir)) + " / " + filepath.Base(dir)
	if res.Meta != nil && res.Meta.Test != "" {
		p.Title = res.Meta.Test + " / " + filepath.Base(dir)
	}
	var end int64 = 1
	if len(ops) > 0 {
		end = max(end, ops[len(ops)-1].Time)
	}
	p.End = secs(end)
	if m := res.Meta; m != nil {
		add := func(k, v string) {
			if v != "" {
				p.Config = append(p.Config, [2]string{k, v})
			}
		}
		add("test", m.Test)
		add("lock recipe", m.Lock)
		add("promise", string(m.Promise))
		add("nemesis", strings.Join(m.Nemesis, ", "))
		if m.Seed != 0 {
			add("seed", fmt.Sprint(m.Seed))
		}
		keys := make([]string, 0, len(m.Config))
		for k := range m.Config {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			add(k, m.Config[k])
		}
	}
	// What the run healed before it started (an earlier run killed mid-run
	// left it) and how long it really ran: a report never claims "no
	// faults" over a node that was frozen, nor a 60 s run that took 108.
	for _, op := range ops {
		if op.Process != history.NemesisProcess {
			continue
		}
		switch op.F {
		case history.FHealLeftover:
			var l struct {
				Node   string   `json:"node"`
				Healed []string `json:"healed"`
			}
			if json.Unmarshal(op.Value, &l) == nil {
				p.Config = append(p.Config, [2]string{"healed before the run", l.Node + ": " + strings.Join(l.Healed, ", ")})
			}
		case history.FPhases:
			var ph history.RunPhases
			if json.Unmarshal(op.Value, &ph) == nil {
				p.Config = append(p.Config, [2]string{"duration", ph.String()})
			}
		}
	}
	// At most maxPerKind of each kind in full (the checker puts the
	// likeliest causes first); the rest are counted.
	perKind := map[string]*kindCount{}
	for i, a := range res.Anomalies {
		kc := perKind[a.Kind]
		if kc == nil {
			kc = &kindCount{Kind: a.Kind}
			perKind[a.Kind] = kc
			p.Kinds = append(p.Kinds, kindCount{})
		}
		if kc.Shown == maxPerKind || len(p.Anomalies) == maxAnoShow {
			kc.More++
			p.More++
			continue
		}
		kc.Shown++
		p.Anomalies = append(p.Anomalies, viewAnomaly(i+1, a))
	}
	p.Kinds = p.Kinds[:0]
	for _, a := range res.Anomalies {
		if kc := perKind[a.Kind]; kc != nil {
			p.Kinds = append(p.Kinds, *kc)
			delete(perKind, a.Kind)
		}
	}
	p.More += res.AnomaliesOmitted
	for i, a := range res.Findings {
		if i == maxAnoShow {
			break
		}
		p.Findings = append(p.Findings, viewAnomaly(i+1, a))
	}
	faults, marks := faultWindows(ops, end)
	holds := res.Holds
	if holds == nil {
		holds = checker.Holds(ops)
	}
	p.Timeline = newTimeline(holds, faults, marks, res.Anomalies, end)
	p.Latency = newChart(ops, faults, end)

	fs := make([]string, 0, len(res.Stats.ByF))
	for f := range res.Stats.ByF {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	for _, f := range fs {
		ok, hasOK := res.Stats.LatencyOK[f]
		all, hasAll := res.Stats.LatencyAll[f]
		p.ByF = append(p.ByF, fRow{F: f, C: res.Stats.ByF[f], OK: ok, All: all, HasOK: hasOK, HasAll: hasAll})
	}
	for proc, c := range res.Stats.ByProcess {
		p.ByProcess = append(p.ByProcess, pRow{Process: proc, C: c})
	}
	sort.Slice(p.ByProcess, func(i, j int) bool { return p.ByProcess[i].Process < p.ByProcess[j].Process })
	if len(p.ByProcess) > 200 {
		p.MoreProcs = len(p.ByProcess) - 200
		p.ByProcess = p.ByProcess[:200]
	}
	for _, f := range []string{HistoryFile, ResultsFile, LogFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			p.Files = append(p.Files, f)
		}
	}
	p.Files = append(p.Files, nodeLogs(dir)...)
	return p
}

func secs(ns int64) string {
	if ns == checker.Never {
		return "never"
	}
	return fmt.Sprintf("%.3fs", float64(ns)/1e9)
}

func viewAnomaly(n int, a checker.Anomaly) anomalyView {
	v := anomalyView{N: n, A: a, Window: secs(a.Start) + " – " + secs(a.End)}
	var ps []string
	for _, p := range a.Processes {
		ps = append(ps, fmt.Sprint(p))
	}
	v.Processes = strings.Join(ps, ", ")
	for i, op := range a.Ops {
		if i == maxOpsShow {
			v.MoreOps = len(a.Ops) - i
			break
		}
		v.Ops = append(v.Ops, viewOp(op))
	}
	return v
}

func viewOp(op history.Op) opRow {
	r := opRow{Index: op.Index, Time: secs(op.Time), Process: fmt.Sprint(op.Process), Type: string(op.Type),
		F: op.F, Lock: op.Lock, Node: op.Node, Error: op.Error, Cls: "t-" + string(op.Type)}
	if len(op.Value) > 0 {
		r.Value = string(op.Value)
		r.FullValue = r.Value
		if len(r.Value) > 60 {
			r.Value = r.Value[:60] + "…"
		}
		if len(r.FullValue) > 2000 {
			r.FullValue = r.FullValue[:2000] + "…"
		}
	}
	if op.LeaseMS > 0 {
		r.Lease = fmt.Sprint(op.LeaseMS)
	}
	return r
}

// fault is a nemesis window: a start-X line paired with the next stop-X.
type fault struct {
	name       string
	start, end int64
	value      string
}

func faultWindows(ops []history.Op, end int64) ([]fault, []fault) {
	// kind -> the open window (position in windows) and how many starts it
	// has not yet seen stopped: faults of one kind may overlap (two nodes
	// paused), and the window lasts until the last of them stops.
	type open struct{ at, n int }
	opened := map[string]*open{}
	var windows, marks []fault
	for i := range ops {
		op := &ops[i]
		if op.Process != history.NemesisProcess || op.F == history.FMeta || op.F == history.FPhases {
			continue
		}
		val := string(op.Value)
		if len(val) > 200 {
			val = val[:200] + "…"
		}
		start, isStart := strings.CutPrefix(op.F, "start-")
		stop, isStop := strings.CutPrefix(op.F, "stop-")
		if strings.HasSuffix(op.F, "-failed") {
			isStart, isStop = false, false
		}
		switch {
		case isStart:
			if o := opened[start]; o != nil {
				o.n++
				continue
			}
			opened[start] = &open{at: len(windows), n: 1}
			windows = append(windows, fault{name: start, start: op.Time, end: end, value: val})
		case isStop:
			if o := opened[stop]; o != nil {
				if o.n--; o.n == 0 {
					windows[o.at].end = op.Time
					delete(opened, stop)
				}
			}
		default:
			if len(marks) < 2000 {
				marks = append(marks, fault{name: op.F, start: op.Time, end: op.Time, value: val})
			}
		}
	}
	return windows, marks
}

func xOf(t, end int64) float64 {
	if t == checker.Never || t > end {
		t = end
	}
	return plotLeft + float64(t)/float64(end)*plotWidth
}

var palette = []string{"#4e79a7", "#59a14f", "#9c755f", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#bab0ac", "#86bcb6", "#8cd17d"}

func newTimeline(holds []checker.Hold, faults, marks []fault, anomalies []checker.Anomaly, end int64) timeline {
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
	tl.PlotH = math.Max(float64(len(rows))*rowHeight, rowHeight)
	tl.Height = tl.PlotH + 40
	nsPerPx := float64(end) / plotWidth
	lockY := map[string][]float64{}
	for i, r := range rows {
		y := 20 + float64(i)*rowHeight
		tr := tlRow{Label: r.label, Full: r.label, Y: y}
		if rs := []rune(r.label); len(rs) > 26 {
			tr.Label = "…" + string(rs[len(rs)-25:])
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
			color := palette[h.Process%len(palette)]
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
	for _, f := range faults {
		x0, x1 := xOf(f.start, end), xOf(f.end, end)
		tl.Faults = append(tl.Faults, rect{X: x0, Y: 18, W: math.Max(x1-x0, 1), H: tl.PlotH + 4,
			Title: fmt.Sprintf("%s %s – %s %s", f.name, secs(f.start), secs(f.end), f.value)})
	}
	for _, m := range marks {
		tl.Marks = append(tl.Marks, rect{X: xOf(m.start, end), Y: 18, H: tl.PlotH + 4,
			Title: fmt.Sprintf("%s at %s %s", m.name, secs(m.start), m.value)})
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

// newChart buckets completed client operations by completion time.
func newChart(ops []history.Op, faults []fault, end int64) chart {
	c := chart{LatencyBase: 20 + chartH, LatencyTop: 20}
	c.ThroughputTop = c.LatencyBase + 40
	c.ThroughputBase = c.ThroughputTop + chartH
	c.Height = c.ThroughputBase + 30
	lat := make([][]float64, buckets)
	var okN, failN, infoN [buckets]int
	open := map[int]int64{}
	for i := range ops {
		op := &ops[i]
		if op.Process < 0 {
			continue
		}
		if op.Type == history.Invoke {
			open[op.Process] = op.Time
			continue
		}
		inv, ok := open[op.Process]
		if !ok {
			continue
		}
		delete(open, op.Process)
		b := int(float64(op.Time) / float64(end) * buckets)
		b = min(max(b, 0), buckets-1)
		switch op.Type {
		case history.OK:
			okN[b]++
			lat[b] = append(lat[b], float64(op.Time-inv)/1e6)
		case history.Fail:
			failN[b]++
		default:
			infoN[b]++
		}
	}
	bw := plotWidth / buckets
	var p50s, p99s, maxs []float64
	top := 0.0
	for b := range buckets {
		l := lat[b]
		if len(l) == 0 {
			p50s, p99s, maxs = append(p50s, math.NaN()), append(p99s, math.NaN()), append(maxs, math.NaN())
			continue
		}
		slices.Sort(l)
		q := func(f float64) float64 { return l[int(f*float64(len(l)-1)+0.5)] }
		p50s, p99s, maxs = append(p50s, q(0.5)), append(p99s, q(0.99)), append(maxs, l[len(l)-1])
		top = math.Max(top, q(0.99))
	}
	if top == 0 {
		c.Empty = true
	}
	top = niceCeil(top * 1.1)
	yOf := func(v float64) float64 {
		return c.LatencyBase - math.Min(v/top, 1.02)*chartH
	}
	line := func(vs []float64) string {
		var b strings.Builder
		for i, v := range vs {
			if math.IsNaN(v) {
				continue
			}
			fmt.Fprintf(&b, "%.1f,%.1f ", plotLeft+(float64(i)+0.5)*bw, yOf(v))
		}
		return b.String()
	}
	c.P50, c.P99, c.Max = line(p50s), line(p99s), line(maxs)
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		c.YTicks = append(c.YTicks, tick{X: yOf(v), Label: trimFloat(v) + " ms"})
	}
	// Throughput, stacked ok/fail/info, in ops/s.
	bucketSecs := float64(end) / 1e9 / buckets
	maxRate := 0.0
	for b := range buckets {
		maxRate = math.Max(maxRate, float64(okN[b]+failN[b]+infoN[b])/bucketSecs)
	}
	maxRate = niceCeil(maxRate)
	for b := range buckets {
		y := c.ThroughputBase
		for _, part := range []struct {
			n    int
			fill string
			name string
		}{{okN[b], "#59a14f", "ok"}, {failN[b], "#bab0ac", "fail"}, {infoN[b], "#f28e2b", "info"}} {
			if part.n == 0 || maxRate == 0 {
				continue
			}
			h := float64(part.n) / bucketSecs / maxRate * chartH
			y -= h
			c.Bars = append(c.Bars, rect{X: plotLeft + float64(b)*bw, Y: y, W: bw, H: h, Fill: part.fill,
				Title: fmt.Sprintf("%s – %s: %d %s (%.0f/s)", secs(int64(float64(b)*bucketSecs*1e9)), secs(int64(float64(b+1)*bucketSecs*1e9)), part.n, part.name, float64(part.n)/bucketSecs)})
		}
	}
	for i := 0; i <= 4; i++ {
		v := maxRate * float64(i) / 4
		c.TTicks = append(c.TTicks, tick{X: c.ThroughputBase - float64(i)/4*chartH, Label: trimFloat(v) + "/s"})
	}
	for _, f := range faults {
		x0, x1 := xOf(f.start, end), xOf(f.end, end)
		c.Faults = append(c.Faults, rect{X: x0, Y: c.LatencyTop, W: math.Max(x1-x0, 1), H: c.ThroughputBase - c.LatencyTop,
			Title: fmt.Sprintf("%s %s – %s", f.name, secs(f.start), secs(f.end))})
	}
	c.Ticks = timeTicks(end, c.Height-8)
	return c
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= p*m {
			return p * m
		}
	}
	return 10 * p
}
