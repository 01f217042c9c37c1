package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	StopValue:  history.ClientPauseStop{Client: 3, Process: 12},
	New:        func() Injector { return &clientPause{} },
}

type clientPause struct{}

// Start stalls the next holder to enter its critical section for its lease
// plus the configured extra. It waits at most hold for a holder.
func (*clientPause) Start(ctx context.Context, e *Env, hold time.Duration) (Stop, error) {
	pctx, cancel := context.WithTimeout(ctx, hold)
	defer cancel()
	p, done, err := e.Clients.PauseHolder(pctx, e.PauseExtra)
	if err != nil {
		return nil, fmt.Errorf("nemesis: client pause: no holder entered a critical section: %w", err)
	}
	if err := e.Record(history.StartF(ClientPause), p, nil); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		// The stall ends on its own; the stop line marks when it did.
		var err error
		select {
		case <-done:
		case <-ctx.Done():
			err = fmt.Errorf("nemesis: client pause of client %d did not end: %w", p.Client, ctx.Err())
		}
		return errors.Join(err, e.Record(history.StopF(ClientPause), history.ClientPauseStop{Client: p.Client, Process: p.Process}, nil))
	}, nil
}

// Reset has nothing to do: a stall ends on its own, and a client's stall
// does not outlive its process.
func (*clientPause) Reset(ctx context.Context, e *Env, t Target) (bool, error) { return false, nil }
