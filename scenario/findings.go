package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// WriteFindings renders docs/findings.md: a reference table of every row
// with the verdict it asserts and its pooled measured rate (the rate's
// dates and machine in columns), each row's mechanism, and the schedules
// the rows deal as written. The batches behind a rate stay in rates.jsonl.
// The page is generated (TestFindingsPage, -update): the rows and
// rates.jsonl are the source.
func WriteFindings(w io.Writer, rows []Row, rates []Rate) error {
	var b strings.Builder
	b.WriteString("# Findings\n\n" +
		"<!-- Generated from scenario/rows.go and scenario/rates.jsonl by `go test ./scenario -update`: edit those, not this page. -->\n\n" +
		"Every row below is asserted: the jepsen tests run it (`runner.TestMatrix` on the shared cluster,\n" +
		"`runner.TestConfigs` on a cluster of its own) and so does `lockcheck matrix --rows NAME`.\n" +
		"A **known-unsafe** row must be caught (verdict invalid) in at least 9 of 10 runs (fewer where a row\n" +
		"says so: a flaw a drawn fault hits in some runs only, asserted at its measured rate), and in `make test`\n" +
		"in one of up to three runs (seeds +0, +1, +2; more for a lower bar, so that a row caught at its bar is\n" +
		"missed in under one pass of a hundred); a **safe** row must be valid in every run, never retried;\n" +
		"every run must inject the row's faults.\n" +
		"The quick tier runs in `make test`, the full tier (rows that repeat a mechanism a quick row shows)\n" +
		"with `LOCKCHECK_FULL=1`. " + fmt.Sprintf("Unless a row says otherwise: %d clients on %d lock.", DefaultClients, DefaultLocks) + "\n" +
		"The fault interval is the nemesis's mean time between faults and mean fault length;\n" +
		"\"node-faults\" are " + strings.Join(NodeFaults, ", ") + ", dealt from a seeded shuffled deck (every kind once per round).\n\n" +
		"\"Measured\" is the row's catch rate at its settings (time and interval): invalid runs of all runs,\n" +
		"pooled over the batches that ran different seeds (`lockcheck matrix --rows NAME --repeat 10 --first N\n" +
		"--record scenario/rates.jsonl`, then `go test ./scenario -update`; a batch that ran seeds again\n" +
		"supersedes the older ones). \"Dates\" and \"machine\" are those batches' dates and the machine's\n" +
		"cores and load average over them (a run's own cluster and clients raise it); \"each run started idle\" where every batch\n" +
		"waited before each run for the 1-minute load to fall under a bound (`matrix --idle-below 2`) and every run started\n" +
		"under it. Each batch, and every rate measured at other settings, is a line of\n" +
		"[scenario/rates.jsonl](../scenario/rates.jsonl).\n\n")
	b.WriteString("| row | recipe | faults | cluster | time | interval | tier | asserted | measured | dates | machine |\n" +
		"| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	byRow := map[string][]Rate{}
	for _, rt := range rates {
		byRow[rt.Row] = append(byRow[rt.Row], rt)
	}
	for _, r := range rows {
		measured, dates, mach := "not measured", "-", "-"
		if rt, batches, ok := Measured(r, byRow[r.Name]); ok {
			measured = pooledCell(rt, batches)
			dates = dateSpan(Pooled(r, byRow[r.Name]))
			mach = machine(rt)
		}
		fmt.Fprintf(&b, "| [`%s`](#%s) | `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Name, anchor(r.Name), r.Recipe, faultsCell(r), r.Cluster, secs(r.Time), interval(r), r.Tier, asserted(r), measured, dates, mach)
	}
	schedules := distinctSchedules(rows)
	b.WriteString("\n## Rows\n\n" +
		"Each row's mechanism: why it is caught, or why it holds. The workload, its clients and locks, and how long\n" +
		"the run goes on follow it in italics.\n\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "### %s\n", r.Name)
		extra := ""
		if rt, _, ok := Measured(r, byRow[r.Name]); ok && rt.FirstAnomaly > 0 {
			extra = fmt.Sprintf(" The first anomaly came %.1f s in (median of the invalid runs of the latest batch).", time.Duration(rt.FirstAnomaly).Seconds())
		}
		switch {
		case r.Schedule != nil && len(r.Schedule.Steps) == 0:
			extra += fmt.Sprintf(" Its schedule is empty: the flaw needs no fault (`run --nemesis none`); shrunk from %s in clients and time.", r.Schedule.Source)
		case r.Schedule != nil:
			i := slices.IndexFunc(schedules, func(s *nemesis.Schedule) bool { return sameSchedule(s, r.Schedule) })
			extra += fmt.Sprintf(" It deals [schedule %d](#schedule-%d) as written.", i+1, i+1)
		}
		fmt.Fprintf(&b, "%s%s *%s workload, %d clients on %s%s, %s.*\n",
			strings.TrimSpace(r.Mechanism), extra, r.Shape(), r.ClientCount(), plural(r.LockCount(), objectWord(r)), retired(r), timing(r))
	}
	if len(schedules) > 0 {
		b.WriteString("\n## Schedules\n\n" +
			"The schedules rows deal as written, step by step (`run --schedule` takes the same steps as a file).\n")
		for i, sc := range schedules {
			fmt.Fprintf(&b, "\n### Schedule %d\n\nFrom %s.\n\n| kind | at | for | nodes | value |\n| --- | --- | --- | --- | --- |\n", i+1, sc.Source)
			for _, st := range sc.Steps {
				value := "-" // a kind without parameters (rack-power-loss)
				if len(st.Value) > 0 {
					value = "`" + string(st.Value) + "`"
				}
				kind := st.Kind
				if st.Overlap {
					kind += " (overlapping)"
				}
				at := st.At.D().String()
				if f := st.After; f != nil {
					at = fmt.Sprintf("%s after step %d %s", at, f.Step, f.Phase)
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", kind, at, st.For.D(), strings.Join(st.Nodes, ","), value)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// distinctSchedules is the rows' schedules with steps, each once, in the
// order of the first row that deals it.
func distinctSchedules(rows []Row) []*nemesis.Schedule {
	var out []*nemesis.Schedule
	for _, r := range rows {
		if r.Schedule == nil || len(r.Schedule.Steps) == 0 {
			continue
		}
		if !slices.ContainsFunc(out, func(s *nemesis.Schedule) bool { return sameSchedule(s, r.Schedule) }) {
			out = append(out, r.Schedule)
		}
	}
	return out
}

func sameSchedule(a, b *nemesis.Schedule) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// pooledCell is a pooled rate in the findings table: "9/10", with the
// runs that are no evidence and the number of batches when more than one.
func pooledCell(rt Rate, batches int) string {
	s := fmt.Sprintf("%d/%d%s", rt.Invalid, rt.Runs, unknown(rt))
	if batches > 1 {
		s += fmt.Sprintf(" (%d batches)", batches)
	}
	return s
}

// dateSpan is the first and last date of the pooled lines (one date,
// or "FIRST to LAST").
func dateSpan(lines []Rate) string {
	if len(lines) == 0 {
		return "-"
	}
	first, last := lines[0].Date, lines[0].Date
	for _, l := range lines[1:] {
		first, last = min(first, l.Date), max(last, l.Date)
	}
	if first == last {
		return first
	}
	return first + " to " + last
}

// measuredCell is a row's pooled rate as the tables show it: "9/10 (date)",
// with the number of batches pooled when more than one.
func measuredCell(rt Rate, batches int, invalidWord string) string {
	pooled := ""
	if batches > 1 {
		pooled = fmt.Sprintf(", %d batches", batches)
	}
	return fmt.Sprintf("%d/%d%s%s (%s%s)", rt.Invalid, rt.Runs, invalidWord, unknown(rt), rt.Date, pooled)
}

func asserted(r Row) string {
	if r.Unsafe {
		return fmt.Sprintf("**invalid**, caught >= %d/10", r.CatchBar())
	}
	if r.Load != nil {
		return "**valid**, or where a request is slowed past its lease only " + strings.Join(r.Load.Kinds, ", ")
	}
	return "**valid** every run"
}

func faultsCell(r Row) string {
	s := r.FaultsName()
	if len(r.Faults) == 0 {
		s = "no fault"
	}
	if r.Pin {
		s += ", clients pinned"
	}
	if r.AimWrite {
		s += ", from a holder's write"
	}
	if f := r.Slow.Flags(); f != "" {
		s += " (" + strings.TrimSpace(f) + ")"
	}
	if r.DCLocal {
		s += ", LOCAL_SERIAL/LOCAL_QUORUM"
	}
	return s
}

func retired(r Row) string {
	switch {
	case r.Deletes:
		return ", deleting keys too (`--deletes`)"
	case !r.RetireStuck:
		return ""
	}
	return ", a fresh lock name whenever a holder is abandoned with a grant that never expires (`--retire-stuck`)"
}

func interval(r Row) string {
	if len(r.Faults) == 0 {
		return "-"
	}
	return secs(r.Interval)
}

func timing(r Row) string {
	if len(r.Faults) == 0 {
		return secs(r.Time)
	}
	if r.Schedule != nil && r.Schedule.DealtInFull() {
		return fmt.Sprintf("%s and on until its schedule is dealt (at most %s more)", secs(r.Time), secs(nemesis.FollowWait))
	}
	if r.Schedule == nil && nemesis.MovesRing(r.Faults) {
		return fmt.Sprintf("%s, fault interval %s, and on until each kind is dealt once (at most %s more)", secs(r.Time), secs(r.Interval), secs(nemesis.FollowWait))
	}
	return fmt.Sprintf("%s, fault interval %s", secs(r.Time), secs(r.Interval))
}

func secs(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return d.String()
}

// unknown tells the runs that are neither valid nor invalid evidence: no
// verdict, or a fault kind of the row never dealt.
func unknown(rt Rate) string {
	s := ""
	if rt.Unknown > 0 {
		s += fmt.Sprintf(", %d unknown", rt.Unknown)
	}
	if rt.NoFault > 0 {
		s += fmt.Sprintf(", %d without every fault kind", rt.NoFault)
	}
	return s
}

func machine(rt Rate) string {
	s := fmt.Sprintf("%d cores", rt.Cores)
	if rt.Load != "" {
		s += ", load " + rt.Load
	}
	if rt.IdleBelow > 0 {
		s += fmt.Sprintf(" (each run started idle, under %g)", rt.IdleBelow)
	}
	return s
}

// anchor is the id GitHub gives the heading of a row's section.
func anchor(name string) string {
	var b strings.Builder
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
			b.WriteRune(c)
		}
	}
	return b.String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// objectWord is what the row's clients contend for: locks, or the
// register's keys.
func objectWord(r Row) string {
	if r.Shape() == workload.ShapeRegister {
		return "key"
	}
	return "lock"
}
