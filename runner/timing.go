package runner

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Timing is how long each phase of a run took on the wall clock, from Run's
// call to its return: what a run costs beyond its own time (Test.Time),
// phase by phase, so that the cost can be found and cut where it does not
// serve the verdict. The matrix prints it per row (issue 51's overhead).
type Timing struct {
	// Requested is the run's own time (Test.Time).
	Requested time.Duration
	// Lease: waiting for the cluster's lease (another process's run).
	Lease time.Duration
	// Prepare: the run directory, the meta line, and what lockcheck did
	// not make on the nodes (nemesis.Foreign).
	Prepare time.Duration
	// Leftovers: healing what an earlier run left and waiting for a
	// healthy cluster (HealLeftovers).
	Leftovers time.Duration
	// Setup: the lock's set-up (session, keyspace and tables, plug-in
	// processes started and set up) and the workload and nemesis made.
	Setup time.Duration
	// Run: clients and faults, until the nemesis closed its last window
	// (history.RunPhases.FaultsMS).
	Run time.Duration
	// Heal, Quiet, Final: as history.RunPhases says them.
	Heal, Quiet, Final time.Duration
	// Close: the clients' locks and sessions closed (plug-in processes
	// stopped).
	Close time.Duration
	// Logs: the nodes' logs copied into the run directory.
	Logs time.Duration
	// Check: the check and the report (Store.Build).
	Check time.Duration
	// Total: Run's call to its return.
	Total time.Duration
}

// Own is what the run cost without the wait for another's lease: the
// machine's time for its verdict.
func (t Timing) Own() time.Duration { return t.Total - t.Lease }

// Overhead is Own beyond the requested time.
func (t Timing) Overhead() time.Duration { return t.Own() - t.Requested }

// Ratio is Own over the requested time (0 when none was requested).
func (t Timing) Ratio() float64 {
	if t.Requested <= 0 {
		return 0
	}
	return float64(t.Own()) / float64(t.Requested)
}

// Add is t and o phase by phase: the time of two runs.
func (t Timing) Add(o Timing) Timing {
	t.Requested += o.Requested
	t.Lease += o.Lease
	t.Prepare += o.Prepare
	t.Leftovers += o.Leftovers
	t.Setup += o.Setup
	t.Run += o.Run
	t.Heal += o.Heal
	t.Quiet += o.Quiet
	t.Final += o.Final
	t.Close += o.Close
	t.Logs += o.Logs
	t.Check += o.Check
	t.Total += o.Total
	return t
}

// phases are the phases in order, named as String and the log say them.
func (t Timing) phases() []struct {
	name string
	d    time.Duration
} {
	return []struct {
		name string
		d    time.Duration
	}{
		{"lease", t.Lease}, {"prepare", t.Prepare}, {"leftovers", t.Leftovers}, {"setup", t.Setup},
		{"run", t.Run}, {"heal", t.Heal}, {"quiet", t.Quiet}, {"final", t.Final},
		{"close", t.Close}, {"logs", t.Logs}, {"check", t.Check},
	}
}

// String says it in one line: "35.2s for 20s (1.76x): prepare 0.4s, ...";
// phases that took no time are left out.
func (t Timing) String() string {
	var parts []string
	for _, p := range t.phases() {
		if p.d >= 50*time.Millisecond {
			parts = append(parts, p.name+" "+round(p.d).String())
		}
	}
	return fmt.Sprintf("%s for %s (%.2fx): %s", round(t.Own()), t.Requested, t.Ratio(), strings.Join(parts, ", "))
}

// LogValue logs every phase, in milliseconds.
func (t Timing) LogValue() slog.Value {
	attrs := []slog.Attr{slog.Int64("requested_ms", t.Requested.Milliseconds())}
	for _, p := range t.phases() {
		attrs = append(attrs, slog.Int64(p.name+"_ms", p.d.Milliseconds()))
	}
	attrs = append(attrs, slog.Int64("total_ms", t.Total.Milliseconds()), slog.String("ratio", fmt.Sprintf("%.2f", t.Ratio())))
	return slog.GroupValue(attrs...)
}

func round(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }

// stopwatch splits a run into consecutive phases: each lap is the time
// since the previous one.
type stopwatch struct{ last time.Time }

func newStopwatch() *stopwatch { return &stopwatch{last: time.Now()} }

// lap adds the time since the last lap to *d.
func (s *stopwatch) lap(d *time.Duration) {
	now := time.Now()
	*d += now.Sub(s.last)
	s.last = now
}
