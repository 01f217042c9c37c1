package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenario"
)

func TestTimeTable(t *testing.T) {
	s := time.Second
	run := runner.Timing{Requested: 10 * s, Lease: 5 * s, Prepare: s, Leftovers: 2 * s, Setup: 3 * s, Run: 10 * s,
		Quiet: 3 * s, Final: s, Check: s, Total: 26 * s}
	rows := []rowRuns{
		{Result: scenario.Result{Row: scenario.Row{Name: "a/row"}}, timings: []runner.Timing{run, run}},
		{Result: scenario.Result{Row: scenario.Row{Name: "untimed"}}},
	}
	var buf bytes.Buffer
	if err := writeTimeTable(&buf, rows); err != nil {
		t.Fatal(err)
	}
	want := `ROW    RUNS  TIME  WALL/RUN  OVERHEAD  LEASE  PREPARE  LEFTOVERS  SETUP  HEAL  QUIET  FINAL  CLOSE  LOGS  CHECK
a/row  2     10s   21s       2.10x     5s     1s       2s         3s     0s    3s     1s     0s     0s    1s
2 runs in 42s of their own (waits for the cluster's lease left out): 171 verdicts per machine-hour
`
	if buf.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", buf.String(), want)
	}
	buf.Reset()
	if err := writeTimeTable(&buf, rows[1:]); err != nil || buf.Len() != 0 {
		t.Errorf("no timed run: %q, %v; want nothing", buf.String(), err)
	}
}
