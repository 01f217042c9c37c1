package nemesis

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Aimed at a holder's write (run --aim-write): coord-net-delay and
// coord-slow-node begin their window as the next client enters its
// critical section, between its read and its write, on that client's
// coordinator, as coord-gc-stall's stalls are aimed. Begun at once, such a
// window meets a holder's write only when it happens to open inside one
// (a critical section is a few milliseconds of a hold, the release's LWT
// most of the rest), and it cannot wait for the next: the slowed
// coordinator's own clients are not granted the lock again while it lasts,
// since each of their Paxos rounds takes seconds and the fast coordinators'
// clients, whose ballots are newer, preempt it. Aimed at the write, every
// window slows one write sent inside a lease.

// aimsAtWrite says whether this window is to wait for a holder's write: the
// run asked for it, the workload's clients are there to pause, and no
// schedule step names the node (a replay slows the recorded one at its
// recorded moment).
func aimsAtWrite(e *Env) bool { return e.AimWrite && e.Clients != nil && e.step == nil }

// atHoldersWrite waits (at most hold) for the next client to enter its
// critical section and runs slow on that client's coordinator, with the
// clients pinned there, before the client goes on to write: the write then
// goes through a coordinator already slowed. The client stands still only
// while slow runs (the pause hook's 1 ms, then the node's command).
func atHoldersWrite(ctx context.Context, e *Env, hold time.Duration, kind string, slow func(node string, clients []int) error) error {
	hctx, cancel := context.WithTimeout(ctx, hold)
	defer cancel()
	_, groups := coordGroups(e)
	claimed := make(chan history.ClientPauseStart, 1)
	done := make(chan error, 1)
	// abandoned is closed when no client claimed the pause: a claimer that
	// resumes then has nothing to slow.
	abandoned := make(chan struct{})
	resumed := func() {
		var p history.ClientPauseStart
		select {
		case p = <-claimed:
		case <-abandoned:
			return
		}
		node, ok := e.Pins[p.Client]
		if !ok || !slices.ContainsFunc(e.Targets, func(t Target) bool { return t.Name == node }) {
			done <- fmt.Errorf("nemesis: %s: client %d has no coordinator", kind, p.Client)
			return
		}
		done <- slow(node, groups[node])
	}
	p, _, err := e.Clients.PauseHolder(hctx, 0, time.Millisecond, resumed)
	if err != nil {
		close(abandoned)
		return fmt.Errorf("nemesis: %s: no holder entered a critical section: %w", kind, err)
	}
	claimed <- p
	return <-done
}
