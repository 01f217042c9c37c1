package scenario

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Result is a row and how its runs came out.
type Result struct {
	Row   Row
	Tally Tally
}

// WriteTable prints the catch-rate table of `lockcheck matrix`: per row, what
// it expects, its runs by verdict, the share of runs invalid, and whether it
// met its expectation.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROW\tEXPECTED\tRUNS\tINVALID\tVALID\tUNKNOWN\tCATCH RATE\tRESULT")
	for _, r := range results {
		t := r.Tally
		result := "pass"
		if !t.Met(r.Row) {
			result = "FAIL"
		}
		if t.NoFault > 0 {
			result += fmt.Sprintf(" (%d runs without the fault)", t.NoFault)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n",
			r.Row.Name, r.Row.Expected(), t.Runs, t.Invalid, t.Valid, t.Unknown, catchRate(t.Invalid, t.Runs), result)
	}
	return tw.Flush()
}

func catchRate(invalid, runs int) string {
	if runs == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d (%d%%)", invalid, runs, invalid*100/runs)
}
