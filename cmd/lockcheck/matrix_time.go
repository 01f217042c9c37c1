package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/lockcheck/lockcheck/runner"
)

// writeTimeTable prints what each row's runs cost on this machine (the sum
// of their runner.Timing, by run): the wall time of a run beside the time it
// asks for, the overhead ratio, and where the overhead went, then the
// verdicts per machine-hour of the whole selection. Rows without a timed
// run are left out; nothing is printed when no run was timed.
func writeTimeTable(w io.Writer, rows []rowRuns) error {
	var runs int
	var own time.Duration
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := false
	for _, r := range rows {
		if len(r.timings) == 0 {
			continue
		}
		if !header {
			fmt.Fprintln(tw, "ROW\tRUNS\tTIME\tWALL/RUN\tOVERHEAD\tLEASE\tPREPARE\tLEFTOVERS\tSETUP\tHEAL\tQUIET\tFINAL\tCLOSE\tLOGS\tCHECK")
			header = true
		}
		var sum runner.Timing
		for _, t := range r.timings {
			sum = sum.Add(t)
		}
		n := time.Duration(len(r.timings))
		avg := func(d time.Duration) string { return (d / n).Round(100 * time.Millisecond).String() }
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.2fx\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.Row.Name, len(r.timings), avg(sum.Requested), avg(sum.Own()), sum.Ratio(), avg(sum.Lease), avg(sum.Prepare),
			avg(sum.Leftovers), avg(sum.Setup), avg(sum.Heal), avg(sum.Quiet), avg(sum.Final), avg(sum.Close), avg(sum.Logs), avg(sum.Check))
		runs += len(r.timings)
		own += sum.Own()
	}
	if !header {
		return nil
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d runs in %s of their own (waits for the cluster's lease left out): %.0f verdicts per machine-hour\n",
		runs, own.Round(time.Second), float64(runs)/own.Hours())
	return err
}
