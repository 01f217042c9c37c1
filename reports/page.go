package reports

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
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
	Title     string // the test's short name (ShortName) and the run
	FullTitle string
	// NeverDealt are the fault kinds requested and never dealt, named so
	// that a test's name does not promise what the run did not do.
	NeverDealt string
	// Stuck are the locks held for good in a run that left its clients
	// waiting on them (checker.KindStuckLock without --retire-stuck): the
	// run tested little on them from then on, which a valid verdict hides.
	Stuck []stuckView
	// StuckLive are the other locks liveness found left held to the end
	// by a dead holder (a killed one, an unknown acquire or release).
	StuckLive []checker.StuckPeriod
	// Shrunk is the smallest reproduction `lockcheck shrink` found, if
	// it ran on this run.
	Shrunk *Shrunk
	// Replayable: the run has fault lines (a schedule to replay and shrink).
	Replayable bool
	Result     checker.Result
	Meta       *history.Meta
	Config     [][2]string
	Anomalies  []anomalyView
	Kinds      []kindCount
	More       int // anomalies not shown in full
	Findings   []anomalyView
	Timeline   timeline
	// FaultLegend names each fault kind of the run in its colour.
	FaultLegend []legendItem
	// FaultRows list the fault windows (MoreFaults: those left out).
	FaultRows  []faultRow
	MoreFaults int
	// HealedBefore is what the run healed before it started, per node
	// ("n1: pause"): shown beside the fault legends, never "no faults" alone.
	HealedBefore []string
	// Foreign is state lockcheck did not make that the nodes held through
	// the run (the meta line's foreign): never "no faults" over it either.
	Foreign []string
	Latency chart
	// Added is the latency the slowness faults added, window by window
	// (addedLatency), said beside the operations' latency and drawn in
	// the latency chart.
	Added     []string
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
	// Faults are the fault windows active in the anomaly's span.
	Faults []activeFault
	// Cause is the likely cause in words, where the mechanism is known.
	Cause string
}

type opRow struct {
	Index                          int64
	Time, Process, Type, F, Lock   string
	Value, Lease, Node, Error, Cls string
	FullValue                      string
	Role                           string // what it did to a hold of the anomaly ("starts 3's hold")
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

func newPage(dir string, ops []history.Op, res checker.Result, vis []visLink) *page {
	p := &page{Dir: dir, Result: res, Meta: res.Meta, Vis: vis, Events: len(ops)}
	p.Title = filepath.Base(filepath.Dir(dir)) + " / " + filepath.Base(dir)
	p.FullTitle = p.Title
	if res.Meta != nil && res.Meta.Test != "" {
		p.Title = ShortName(res.Meta.Test, res.Meta.Nemesis) + " / " + filepath.Base(dir)
		p.FullTitle = res.Meta.Test + " / " + filepath.Base(dir)
	}
	if res.Injected != nil && len(res.Injected.Never) > 0 {
		p.NeverDealt = strings.Join(res.Injected.Never, ", ")
	}
	p.Shrunk = readShrunk(dir)
	if res.Injected != nil {
		for _, n := range res.Injected.Dealt {
			p.Replayable = p.Replayable || n > 0
		}
	}
	var end int64 = 1
	if len(ops) > 0 {
		end = max(end, ops[len(ops)-1].Time)
	}
	p.End = secs(end)
	p.Stuck = stuckLocks(res, end)
	p.StuckLive = stuckLive(res, p.Stuck)
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
			v := m.Config[k]
			// A run with --retire-stuck moves its clients to fresh names:
			// the configured count is not all the history holds.
			if n, err := strconv.Atoi(v); k == "locks" && err == nil && res.Stats.Locks > n {
				v = fmt.Sprintf("%d configured, %d names in the history", n, res.Stats.Locks)
			}
			add(k, v)
		}
	}
	// What the run healed before it started (an earlier run killed mid-run
	// left it) and how long it really ran: a report never claims "no
	// faults" over a node that was frozen, nor a 60 s run that took 108.
	if m := res.Meta; m != nil {
		for _, f := range m.Foreign {
			w := f.Node + ": " + f.What
			p.Config = append(p.Config, [2]string{"not lockcheck's", w})
			p.Foreign = append(p.Foreign, w)
		}
	}
	if res.SetupFailed != "" {
		p.Config = append(p.Config, [2]string{"set-up failed", res.SetupFailed})
	}
	for _, op := range ops {
		if op.Process != history.NemesisProcess {
			continue
		}
		switch op.F {
		case history.FHealLeftover:
			var l history.HealLeftover
			if json.Unmarshal(op.Value, &l) == nil {
				h := l.Node + ": " + strings.Join(l.Healed, ", ")
				if len(l.Found) > 0 {
					h += " (" + strings.Join(l.Found, ", ") + ")"
				}
				p.Config = append(p.Config, [2]string{"healed before the run", h})
				p.HealedBefore = append(p.HealedBefore, h)
			}
		case history.FPhases:
			var ph history.RunPhases
			if json.Unmarshal(op.Value, &ph) == nil {
				p.Config = append(p.Config, [2]string{"duration", ph.String()})
			}
		}
	}
	faults, marks := faultViews(ops, res.Meta, end)
	tl := newCauseTimeline(ops, res.Meta, res.Timeline)
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
		p.Anomalies = append(p.Anomalies, viewAnomaly(i+1, a, faults, tl))
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
		p.Findings = append(p.Findings, viewAnomaly(i+1, a, faults, tl))
	}
	p.FaultLegend = legend(faults)
	p.FaultRows, p.MoreFaults = faultRows(faults)
	holds := res.Holds
	if holds == nil {
		holds = checker.Holds(ops)
	}
	p.Timeline = newTimeline(holds, faults, marks, res.Anomalies, end)
	added := addedLatency(faults)
	p.Latency = newChart(ops, faults, added, end)
	for _, a := range added {
		p.Added = append(p.Added, a.Text)
	}

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

type stuckView struct {
	Lock, From string
	Share      int // percent of the run
	Finding    int
}

// stuckLive are the liveness periods that lasted to the end on locks the
// stuck line does not name already.
func stuckLive(res checker.Result, said []stuckView) []checker.StuckPeriod {
	var out []checker.StuckPeriod
	for _, s := range res.Liveness.StuckAtEnd() {
		if !slices.ContainsFunc(said, func(v stuckView) bool { return v.Lock == s.Lock }) {
			out = append(out, s)
		}
	}
	return out
}

// stuckLocks are the stuck locks the run's clients went on waiting on.
func stuckLocks(res checker.Result, end int64) []stuckView {
	var out []stuckView
	for _, f := range res.LeftWaiting() {
		n := slices.IndexFunc(res.Findings, func(a checker.Anomaly) bool { return a.Kind == f.Kind && a.Lock == f.Lock })
		if n >= maxAnoShow {
			n = -1 // not shown in full: no anchor to link to
		}
		out = append(out, stuckView{Lock: f.Lock, From: secs(f.Start), Share: int(math.Round(100 * float64(end-f.Start) / float64(end))), Finding: n + 1})
	}
	return out
}

func secs(ns int64) string {
	if ns == checker.Never {
		return "never"
	}
	return fmt.Sprintf("%.3fs", float64(ns)/1e9)
}

func viewAnomaly(n int, a checker.Anomaly, faults []faultView, tl *causeTimeline) anomalyView {
	v := anomalyView{N: n, A: a, Window: secs(a.Start) + " – " + secs(a.End), Faults: activeFaults(faults, a.Start, a.End), Cause: likelyCause(a, faults, tl)}
	// A lost add's table shows the write that overwrote it, where the cause
	// names it (likelyCause puts that sentence first when it does).
	if w, _, ok := overwriter(a, tl); ok && strings.HasPrefix(v.Cause, overwrittenBy) {
		a.Ops = append(slices.Clone(a.Ops), w...)
		slices.SortStableFunc(a.Ops, func(x, y history.Op) int { return cmp.Compare(x.Index, y.Index) })
	}
	var ps []string
	for _, p := range a.Processes {
		ps = append(ps, fmt.Sprint(p))
	}
	v.Processes = strings.Join(ps, ", ")
	roles := holdRoles(a, tl)
	for i, op := range a.Ops {
		if i == maxOpsShow {
			v.MoreOps = len(a.Ops) - i
			break
		}
		r := viewOp(op)
		r.Role = roles[op.Index]
		v.Ops = append(v.Ops, r)
	}
	return v
}

// holdRoles says, for an anomaly between holds (an overlap, a stale
// holder's write), which of its operations set each hold's start (the ok
// grant that began it) and end (the release's invocation, or the grant
// whose lease ran out: a heartbeat), by line index.
func holdRoles(a checker.Anomaly, tl *causeTimeline) map[int64]string {
	if a.Kind != checker.KindOverlap && a.Kind != checker.KindStaleWrite {
		return nil
	}
	roles := map[int64]string{}
	for _, p := range a.Processes {
		started := false
		for _, op := range a.Ops {
			if op.Process != p {
				continue
			}
			switch {
			case !started && op.Type == history.OK && (op.F == history.FAcquire || op.F == history.FRenew):
				started = true
				roles[op.Index] = fmt.Sprintf("starts %d's hold", p)
			case op.Type == history.Invoke && op.F == history.FRelease:
				roles[op.Index] = fmt.Sprintf("ends %d's hold", p)
			}
		}
		if g, ok := tl.lastGrant(a.Lock, a.Ops, p); ok {
			if _, released := releaseOf(a.Ops, p); !released {
				role := fmt.Sprintf("ends %d's hold: lease to %s", p, secs(g.deadline()))
				// A release the anomaly's operations leave out ended it
				// first.
				if rel, ok := releaseAfter(tl, g); ok {
					role = fmt.Sprintf("%d's hold ended by its release at %s (line %d)", p, secs(rel.Time), rel.Index)
				}
				if roles[g.OK.Index] != "" {
					role = roles[g.OK.Index] + "; " + role
				}
				roles[g.OK.Index] = role
			}
		}
	}
	return roles
}

// releaseAfter is the release invoked by g's process on its lock after g
// and before g's deadline, in the checker's timeline.
func releaseAfter(tl *causeTimeline, g grantOf) (history.Op, bool) {
	lt := tl.lock(g.Invoke.Lock)
	if lt == nil {
		return history.Op{}, false
	}
	for _, rel := range lt.Releases {
		if rel.Process == g.Process && rel.Invoke.Index > g.OK.Index {
			return rel.Invoke, rel.Invoke.Time <= g.deadline()
		}
	}
	return history.Op{}, false
}

func releaseOf(ops []history.Op, p int) (history.Op, bool) {
	for _, op := range ops {
		if op.Process == p && op.Type == history.Invoke && op.F == history.FRelease {
			return op, true
		}
	}
	return history.Op{}, false
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

// ShortName is a test's name where space is short: its list of fault
// kinds, when it has more than three, becomes their count
// ("lease-fenced-partition_pause_kill_clock_loss" is "lease-fenced-5-faults");
// the full name stays in the page's title attribute and the run's meta.
func ShortName(test string, kinds []string) string {
	if len(kinds) <= 3 {
		return test
	}
	list := strings.Join(kinds, "_")
	if !strings.Contains(test, list) {
		return test
	}
	return strings.Replace(test, list, fmt.Sprintf("%d-faults", len(kinds)), 1)
}

// ShrinkDir is where `lockcheck shrink` stores what it found, in the run's
// directory; ShrinkFile its summary.
const (
	ShrinkDir  = "shrink"
	ShrinkFile = "shrink.json"
)

// Shrunk is the summary `lockcheck shrink` writes (shrink/shrink.json):
// the smallest schedule and run found that still fail the same way.
type Shrunk struct {
	Anomaly  string   `json:"anomaly"`  // the anomaly kind kept
	Schedule string   `json:"schedule"` // the minimal schedule file, relative to the run directory
	Steps    int      `json:"steps"`
	Caught   int      `json:"caught"` // tries of the minimal candidate that failed the same way
	Tries    int      `json:"tries"`
	Command  string   `json:"command"` // the one command that reproduces it
	Clients  int      `json:"clients"`
	Locks    int      `json:"locks"`
	Time     string   `json:"time"`
	Runs     int      `json:"runs"`    // replays the search made
	Seconds  float64  `json:"seconds"` // its wall time
	Notes    []string `json:"notes,omitempty"`
}

func readShrunk(dir string) *Shrunk {
	b, err := os.ReadFile(filepath.Join(dir, ShrinkDir, ShrinkFile))
	if err != nil {
		return nil
	}
	var s Shrunk
	if json.Unmarshal(b, &s) != nil || s.Command == "" {
		return nil
	}
	return &s
}
