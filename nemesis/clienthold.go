package nemesis

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/faultkind"
	"github.com/lockcheck/lockcheck/history"
)

// ClientHold holds the clients between two of their operations for the
// window: the application stops sending requests for a while (a deploy, a
// night without traffic), and the cluster's state ages with nothing
// touching it: the Paxos state of the last writes passes its purge grace,
// a tombstone its gc_grace_seconds. It is the one client kind the register
// workload takes (its clients hold no lock, but they rest between
// operations).
const ClientHold = "client-hold"

// holdWait bounds the wait for every client to finish the operation in
// flight: an operation's own time-out, with room on a loaded machine.
const holdWait = time.Minute

var clientHoldKind = Kind{
	Name: ClientHold, Scope: ScopeClient, Color: "#c5b0d5",
	Doc: "Holds every client (or those a step names) between two of its operations for the window, then lets them go " +
		"on: the application sends no request for a while (a deploy, a night without traffic), and the cluster's state " +
		"ages untouched. The register workload's clients take it too.",
	AnyClients: true,
	StartValue: ClientHoldStart{Clients: []int{0, 1, 2, 3, 4}},
	StopValue:  ClientHoldStop{HeldMS: 150000},
	Check:      checkClientHold,
	New:        func() Injector { return &clientHold{} },
}

// ClientHoldStart is the value of a start-client-hold line.
type ClientHoldStart struct {
	Clients []int `json:"clients" doc:"the clients held, at rest between two operations from the line's time on"`
}

// ClientHoldStop is the value of a stop-client-hold line.
type ClientHoldStop struct {
	HeldMS int64 `json:"held_ms" doc:"how long the clients were held, in milliseconds"`
}

// checkClientHold refuses a schedule's step that names a client twice or a
// negative one (the run's client count is checked when the window starts).
func checkClientHold(e *Env) error {
	if e.schedule == nil {
		return nil
	}
	for i, st := range e.schedule.Steps {
		if st.Kind != ClientHold || len(st.Value) == 0 {
			continue
		}
		v, ok := faultkind.Decode[ClientHoldStart](st.Value)
		if !ok {
			return fmt.Errorf("schedule step %d: value %s is not a client hold's", i+1, oneLine(st.Value))
		}
		for j, c := range v.Clients {
			if c < 0 || slices.Contains(v.Clients[:j], c) {
				return fmt.Errorf("schedule step %d: clients %v: want distinct client numbers from 0", i+1, v.Clients)
			}
		}
	}
	return nil
}

type clientHold struct{}

// Start holds the clients once each has finished the operation in flight,
// and records the start line then: from it to the stop line no held client
// has an operation open.
func (*clientHold) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	n := e.Clients.Clients()
	cs := make([]int, n)
	for i := range cs {
		cs[i] = i
	}
	if v, ok := given[ClientHoldStart](e); ok && len(v.Clients) > 0 {
		cs = v.Clients
		for _, c := range cs {
			if c >= n {
				return nil, fmt.Errorf("nemesis: %s: the schedule names client %d, and the run has %d", ClientHold, c, n)
			}
		}
	}
	hctx, cancel := context.WithTimeout(ctx, holdWait)
	defer cancel()
	release, err := e.Clients.HoldAtRest(hctx, cs)
	if err != nil {
		return nil, fmt.Errorf("nemesis: %s: %w", ClientHold, err)
	}
	began := time.Now()
	if err := e.Record(history.StartF(ClientHold), ClientHoldStart{Clients: cs}, nil); err != nil {
		release()
		return nil, err
	}
	return func(ctx context.Context) error {
		release()
		return e.Record(history.StopF(ClientHold), ClientHoldStop{HeldMS: time.Since(began).Milliseconds()}, nil)
	}, nil
}

// Reset has nothing to do: a hold does not outlive its process.
func (*clientHold) Reset(ctx context.Context, e *Env, t Target) (bool, error) { return false, nil }
