package scenario

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// WriteFindings renders docs/findings.md: every row with the verdict it
// asserts, its measured catch rates and its mechanism. The page is
// generated (TestFindingsPage, -update): the rows and rates.jsonl are the
// source.
func WriteFindings(w io.Writer, rows []Row, rates []Rate) error {
	var b strings.Builder
	b.WriteString("# Findings\n\n" +
		"<!-- Generated from scenario/rows.go and scenario/rates.jsonl by `go test ./scenario -update`: edit those, not this page. -->\n\n" +
		"Every row below is asserted: the jepsen tests run it (`runner.TestMatrix` on the shared cluster,\n" +
		"`runner.TestConfigs` on a cluster of its own) and so does `lockcheck matrix --rows NAME`.\n" +
		"A **known-unsafe** row must be caught (verdict invalid) in at least 9 of 10 runs (fewer where a row\n" +
		"says so: a flaw a drawn fault hits in some runs only, asserted at its measured rate), and in `make test`\n" +
		"in one of up to three runs (seeds +0, +1, +2; more for a lower bar, so that a row caught at its bar is\n" +
		"missed in under one pass of a hundred: the machine is loaded there, and a row's rate is\n" +
		"measured, not assumed); a **safe** row must be valid in every run, never retried; every run must\n" +
		"inject the row's faults.\n" +
		"The quick tier runs in `make test`, the full tier (rows that repeat a mechanism a quick row shows)\n" +
		"with `LOCKCHECK_FULL=1`. " + fmt.Sprintf("Unless a row says otherwise: %d clients on %d lock.", DefaultClients, DefaultLocks) + "\n" +
		"The fault interval is the nemesis's mean time between faults and mean fault length;\n" +
		"\"node-faults\" are " + strings.Join(NodeFaults, ", ") + ", dealt from a seeded shuffled deck (every kind once per round).\n\n" +
		"\"Measured\" is the last catch rate measured at the row's settings: invalid runs of all runs and\n" +
		"its date (`lockcheck matrix --rows NAME --repeat 10 --record scenario/rates.jsonl`, then\n" +
		"`go test ./scenario -update`), with earlier batches of other seeds at those settings added in\n" +
		"(`--first N` runs seeds N, N+1, ...; a batch that ran seeds again supersedes the older lines,\n" +
		"except that a rerun of runs that all left a fault kind undealt replaces just those).\n" +
		"Every rate, with the machine's cores and load average and those measured at other settings, is\n" +
		"listed under its row.\n\n")
	b.WriteString("| row | recipe | faults | cluster | time | interval | tier | asserted | measured |\n" +
		"| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	byRow := map[string][]Rate{}
	for _, rt := range rates {
		byRow[rt.Row] = append(byRow[rt.Row], rt)
	}
	for _, r := range rows {
		measured := "not measured"
		if rt, batches, ok := Measured(r, byRow[r.Name]); ok {
			measured = measuredCell(rt, batches, "")
		}
		fmt.Fprintf(&b, "| [`%s`](#%s) | `%s` | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Name, anchor(r.Name), r.Recipe, faultsCell(r), r.Cluster, secs(r.Time), interval(r), r.Tier, asserted(r), measured)
	}
	b.WriteString("\n## Rows\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "\n### %s\n\n", r.Name)
		fmt.Fprintf(&b, "`%s`, %s workload, %s, %s, %s; %d clients on %s%s. Asserted: %s (%s tier).\n\n",
			r.Recipe, r.Shape(), faultsCell(r), r.Cluster, timing(r), r.ClientCount(), plural(r.LockCount(), objectWord(r)), retired(r), asserted(r), r.Tier)
		b.WriteString(r.Mechanism + "\n")
		if r.Schedule != nil && len(r.Schedule.Steps) == 0 {
			fmt.Fprintf(&b, "\nIts schedule is empty: the flaw needs no fault (`run --nemesis none`); shrunk from %s in clients and time.\n", r.Schedule.Source)
		}
		if r.Schedule != nil && len(r.Schedule.Steps) > 0 {
			b.WriteString("\nIts schedule, dealt as written (`run --schedule` takes the same steps as a file):\n\n| kind | at | for | nodes | value |\n| --- | --- | --- | --- | --- |\n")
			for _, st := range r.Schedule.Steps {
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
		if len(byRow[r.Name]) > 0 {
			// The time to the first anomaly is a column where it was
			// measured (the shrunk rows).
			timed := slices.ContainsFunc(byRow[r.Name], func(rt Rate) bool { return rt.FirstAnomaly > 0 })
			if timed {
				b.WriteString("\n| invalid / runs | time | interval | first anomaly (median) | date | machine |\n| --- | --- | --- | --- | --- | --- |\n")
			} else {
				b.WriteString("\n| invalid / runs | time | interval | date | machine |\n| --- | --- | --- | --- | --- |\n")
			}
			for _, rt := range byRow[r.Name] {
				first := ""
				if timed {
					first = " - |"
					if rt.FirstAnomaly > 0 {
						first = fmt.Sprintf(" %.1f s |", time.Duration(rt.FirstAnomaly).Seconds())
					}
				}
				batch := ""
				if rt.First > 0 {
					batch = fmt.Sprintf(" (runs %d-%d)", rt.First+1, rt.First+rt.Runs)
				}
				fmt.Fprintf(&b, "| %d/%d%s%s | %s | %s |%s %s | %s |\n", rt.Invalid, rt.Runs, unknown(rt), batch,
					secs(time.Duration(rt.Time)), secs(time.Duration(rt.Interval)), first, rt.Date, machine(rt))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
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
	if f := r.Slow.Flags(); f != "" {
		s += " (" + strings.TrimSpace(f) + ")"
	}
	if r.DCLocal {
		s += ", LOCAL_SERIAL/LOCAL_QUORUM"
	}
	return s
}

func retired(r Row) string {
	if !r.RetireStuck {
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
