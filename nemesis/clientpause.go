package nemesis

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/faultkind"
	"github.com/lockcheck/lockcheck/history"
)

// ClientPause stalls a holder between its read and its write, past its
// lease.
const ClientPause = history.KindClientPause

var clientPauseKind = Kind{
	Name: ClientPause, Scope: ScopeClient, Color: "#76b7b2",
	Doc: "Stalls the next client to enter its critical section between its read and its write, for its lease plus " +
		"the pause extra (--pause-extra), as a GC pause would: its write lands after the lease expired.",
	StartValue: history.ClientPauseStart{Client: 3, Lock: "l0", MS: 4700, Process: 12},
	StopValue:  history.ClientPauseStop{Client: 3, Process: 12, StalledMS: 4702},
	Cause: &faultkind.Cause{Anomalies: []string{faultkind.StaleWrite, faultkind.Overlap, faultkind.NonLinearizable},
		Explain: func(w history.FaultWindow, a faultkind.Anomaly) (string, bool) {
			v, ok := faultkind.Decode[history.ClientPauseStart](w.Value, "process")
			if !ok {
				return "", false
			}
			if len(a.Processes) > 0 && !slices.Contains(a.Processes, v.Process) {
				return "", false
			}
			stalled := float64(v.MS) / 1000
			if w.End > w.Start && w.Starts == 1 {
				stalled = float64(w.End-w.Start) / 1e9 // the stall's own times, start to resume
			}
			who := fmt.Sprintf("stalled holder: process %d stood still %.1f s in its critical section (client-pause, %s – %s), past its lease",
				v.Process, stalled, faultkind.Secs(w.Start), faultkind.Secs(w.End))
			switch a.Kind {
			case faultkind.Overlap:
				return who + "; another client acquired the lock while it still believed it held it", true
			case faultkind.NonLinearizable:
				return who + "; another client acquired the expired lease, and the stalled holder's late write leaves the lock's operations no legal order", true
			default:
				return who + "; its write landed after another client had acquired the expired lease", true
			}
		}},
	New: func() Injector { return &clientPause{} },
}

type clientPause struct{}

// Start stalls the next holder to enter its critical section for its lease
// plus the configured extra. It waits at most hold for a holder. The start
// line is written once the stall has begun, the stop line the moment the
// client resumed (not when the schedule's window ends: a client that
// resumed early runs on inside it).
func (*clientPause) Start(ctx context.Context, e *Env, hold time.Duration) (Stop, error) {
	pctx, cancel := context.WithTimeout(ctx, hold)
	defer cancel()
	// The stop line is written in the client's goroutine as it resumes,
	// so that none of its own operations precedes it; it waits for the
	// start line (a stall shorter than a history append is still ordered).
	var began time.Time
	var p history.ClientPauseStart
	startWritten := make(chan struct{})
	recorded := make(chan error, 1)
	resumed := func() {
		<-startWritten
		recorded <- e.Record(history.StopF(ClientPause), history.ClientPauseStop{Client: p.Client, Process: p.Process,
			StalledMS: time.Since(began).Milliseconds()}, nil)
	}
	var stall time.Duration
	if v, ok := given[history.ClientPauseStart](e); ok && v.MS > 0 {
		stall = time.Duration(v.MS) * time.Millisecond // the stall as it happened
	}
	p, _, err := e.Clients.PauseHolder(pctx, e.PauseExtra, stall, resumed)
	if err != nil {
		close(startWritten) // never waited on: no stall began
		return nil, fmt.Errorf("nemesis: client pause: no holder entered a critical section: %w", err)
	}
	began = time.Now()
	err = e.Record(history.StartF(ClientPause), p, nil)
	close(startWritten)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		select {
		case err := <-recorded:
			return err
		case <-ctx.Done():
			return fmt.Errorf("nemesis: client pause of client %d did not end: %w", p.Client, ctx.Err())
		}
	}, nil
}

// Reset has nothing to do: a stall ends on its own, and a client's stall
// does not outlive its process.
func (*clientPause) Reset(ctx context.Context, e *Env, t Target) (bool, error) { return false, nil }
