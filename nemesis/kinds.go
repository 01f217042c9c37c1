package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/faultkind"
	"github.com/lockcheck/lockcheck/history"
)

// Scope is what a fault kind acts on.
type Scope int

const (
	// ScopeNode kinds act on Cassandra nodes (Targets).
	ScopeNode Scope = iota
	// ScopeClient kinds act on the harness's clients (Clients).
	ScopeClient
)

func (s Scope) String() string {
	if s == ScopeClient {
		return "client"
	}
	return "node"
}

// Kind describes one fault kind: a value in the table below, as etcd's
// robustness failpoints are. Everything the rest of lockcheck asks of a kind
// (is it in `all`, can these nodes serve it, what colour the reports draw
// it in, what its history lines hold) is read off this value, never off
// the kind's name.
type Kind struct {
	// Name is the kind as --nemesis takes it and as the history names it
	// (history.StartF(Name)).
	Name  string
	Scope Scope
	// Color is the CSS colour reports draw the kind's fault windows in.
	Color string
	// Doc says what one fault of the kind does (the fault reference,
	// docs/faults.md).
	Doc string
	// Needs are what every node must be able to do (node kinds): a node
	// whose Capabilities lack one refuses the kind before the run.
	Needs []Capability
	// Pins marks a kind aimed by the clients' coordinators (Env.Pins, from
	// `run --pin-clients`): it is refused without clients pinned to two
	// nodes or more, and `all` leaves it out.
	Pins bool
	// Restarts marks a kind whose stop restarts nodes (a minute on a
	// loaded machine): the scheduler deals it last in each round, so that
	// a short run still sees the quick ones.
	Restarts bool
	// StopWait, when set, bounds the kind's stop instead of the scheduler's
	// bound for its class (stopTimeout, restartStopTimeout): a window whose
	// stop runs a whole operator's procedure (paxos-upgrade's rolling
	// restarts and repairs) is recorded done, not cut short by a bound
	// sized for one node's restart.
	StopWait time.Duration
	// Streams marks a kind whose windows report the Streamed phase (the
	// membership kinds: the first range movement's streaming done), which
	// a schedule's step can follow.
	Streams bool
	// AnyClients marks a client kind that any workload's clients serve,
	// the register's too (client-hold: clients rest between operations);
	// the others act on a lock's clients (a holder, a lease's clock, a
	// lock's process).
	AnyClients bool
	// OneWay marks a kind whose change outlives its window and its run's
	// heal, as an operator's upgrade does (paxos-upgrade): its injector
	// has a Revert, which only the next run's HealLeftovers calls (and
	// records), and a run that dealt it does not count as leaving the
	// cluster healed (Nemesis.OneWay).
	OneWay bool
	// StartValue and StopValue are examples of the values its start and
	// stop lines carry, of package history's fault value types (the fault
	// reference shows them and lists their fields).
	StartValue, StopValue any
	// Check, when set, is what the kind needs of the nodes as a whole
	// beyond each one's capabilities (dc-partition: two data centres): its
	// error is the refusal's reason, one line, before the run.
	Check func(e *Env) error
	// New makes the kind's injector for one nemesis (it keeps the state
	// its heal needs).
	New func() Injector
	// Cause, when set, is the sentence that explains the kind's windows as
	// the likely cause of an anomaly, and the anomalies it may explain:
	// the table registers it with package faultkind, where the reports
	// read it (a kind without one is named beside an anomaly, never as
	// its mechanism).
	Cause *faultkind.Cause
}

// Injector injects and undoes the faults of one kind for one nemesis.
type Injector interface {
	// Start draws one fault from e.Sched (every draw before anything that
	// waits, so that a seed fixes the schedule), applies it, records its
	// start line and returns the Stop that undoes exactly what it did and
	// records the stop line. The fault should last about hold.
	Start(ctx context.Context, e *Env, hold time.Duration) (Stop, error)
	// Reset brings one node (ScopeNode), or the clients (ScopeClient; t is
	// the zero Target), back to the known state, whatever an earlier and
	// possibly SIGKILLed process did, as Jepsen's nemesis setup does. It
	// asks the node rather than trusting a record, is harmless on a healthy
	// node, and says whether it found anything to undo.
	Reset(ctx context.Context, e *Env, t Target) (healed bool, err error)
}

// Stop ends a fault: it undoes what its Start did and records the stop line.
type Stop func(ctx context.Context) error

// table lists every fault kind, in the order `all` expands to. Adding a
// kind is one file with its Kind value and injector, and one row here.
var table = []*Kind{
	&partitionKind,
	&pauseKind,
	&killKind,
	&clockKind,
	&clientPauseKind,
	&clientClockKind,
	&clientKillKind,
	&lossKind,
	&powerLossKind,
	&rackPowerLossKind,
	&coordPartitionKind,
	&coordClockKind,
	&dcPartitionKind,
	&joinKind,
	&leaveKind,
	&replaceKind,
	&removeKind,
	&netDelayKind,
	&netRateKind,
	&coordNetDelayKind,
	&slowNodeKind,
	&coordSlowNodeKind,
	&gcStallKind,
	&coordGCStallKind,
	&clientGCStallKind,
	&slowDiskKind,
	&restoreKind,
	&paxosUpgradeKind,
	&maintenanceKind,
	&clientHoldKind,
}

// The table's causes, registered in table order for the reports.
func init() {
	for _, k := range table {
		if k.Cause != nil {
			faultkind.Register(k.Name, *k.Cause)
		}
	}
}

// Table is every fault kind's descriptor, in table order (a copy: the
// caller may keep it).
func Table() []Kind {
	out := make([]Kind, len(table))
	for i, k := range table {
		out[i] = *k
	}
	return out
}

// Lookup is the descriptor of the kind of that name (a copy), or the
// error that names the kinds there are.
func Lookup(name string) (Kind, error) {
	if k := lookup(name); k != nil {
		return *k, nil
	}
	return Kind{}, unknown(name)
}

// lookup is the kind of that name, or nil.
func lookup(name string) *Kind {
	for _, k := range table {
		if k.Name == name {
			return k
		}
	}
	return nil
}

// Kinds are the names of every fault kind, in table order.
var Kinds = func() []string {
	var out []string
	for _, k := range table {
		out = append(out, k.Name)
	}
	return out
}()

// All is what `all` expands to, in table order: every kind whose needs
// every node backend meets (Baseline) and that needs no pins. The power
// kinds (a lazy filesystem) and the coord kinds (pinned clients) are named
// one by one.
func All() []string {
	var out []string
	for _, k := range table {
		if k.inAll() {
			out = append(out, k.Name)
		}
	}
	return out
}

func (k *Kind) inAll() bool {
	return !k.Pins && k.Check == nil && len(missing(k.Needs, Baseline)) == 0
}

// Aimed says whether the kind of that name is aimed by the clients'
// coordinators (it needs `run --pin-clients`).
func Aimed(name string) bool {
	k := lookup(name)
	return k != nil && k.Pins
}

// AnyClients says whether the kind of that name is a client kind that any
// workload's clients serve (Kind.AnyClients): the register workload takes
// it.
func AnyClients(name string) bool {
	k := lookup(name)
	return k != nil && k.AnyClients
}

// needPins is the check of the kinds aimed by Env.Pins: clients on at least
// two nodes.
func needPins(e *Env) error {
	nodes := map[string]bool{}
	for _, n := range e.Pins {
		nodes[n] = true
	}
	if len(nodes) < 2 {
		return errors.New("needs clients pinned to at least two coordinators (`run --pin-clients`, two clients or more, two nodes or more)")
	}
	return nil
}

// check refuses the kind, before the run, when e cannot serve it: a client
// kind without clients, a node kind without nodes or on a node that lacks a
// capability it needs, an aimed kind without pins. Each reason is one line.
func (k *Kind) check(e *Env) error {
	switch {
	case k.Scope == ScopeClient && e.Clients == nil && !e.clientsLater:
		return fmt.Errorf("nemesis: %s needs the workload's clients", k.Name)
	case k.Scope == ScopeNode && len(e.Targets) == 0:
		return fmt.Errorf("nemesis: %s needs nodes", k.Name)
	}
	if k.Pins {
		if err := needPins(e); err != nil {
			return fmt.Errorf("nemesis: %s: %w", k.Name, err)
		}
	}
	if k.Check != nil {
		if err := k.Check(e); err != nil {
			return fmt.Errorf("nemesis: %s: %w", k.Name, err)
		}
	}
	if k.Scope != ScopeNode {
		return nil
	}
	var errs []error
	for _, t := range e.Targets {
		var caps []Capability // a target without a node can do nothing
		if t.Node != nil {
			caps = t.Node.Capabilities()
		}
		for _, c := range missing(k.Needs, caps) {
			errs = append(errs, refusal(k.Name, t.Name, c))
		}
	}
	return errors.Join(errs...)
}

func unknown(name string) error {
	return fmt.Errorf("nemesis: unknown fault %q (want none, all or a comma list of %s)", name, strings.Join(Kinds, ", "))
}

// ScopeOf is the scope of a kind by name (ScopeNode for an unknown name:
// New rejects those).
func ScopeOf(name string) Scope {
	if k := lookup(name); k != nil {
		return k.Scope
	}
	return ScopeNode
}

// AnyNodeKind says whether kinds hold a node fault (the run then waits for
// a healthy cluster after the heal).
func AnyNodeKind(kinds []string) bool {
	return slices.ContainsFunc(kinds, func(k string) bool { return ScopeOf(k) == ScopeNode })
}

// AnyMembershipKind says whether kinds hold a kind that moves ranges (join,
// leave, replace, remove).
func AnyMembershipKind(kinds []string) bool {
	return slices.ContainsFunc(kinds, func(name string) bool {
		k := lookup(name)
		return k != nil && slices.Contains(k.Needs, CapMembership)
	})
}

// HealBudget is how long a heal may take, given the caller's budget: one
// that may move a node (after a membership kind, or a cluster with spares
// that a killed run may have left mid-movement) bootstraps a node that left
// again, which at load 40 on 2 cores outlasted a 3-minute heal (2026-11-28),
// so it gets as long as one window's movements.
func HealBudget(movesNodes bool, budget time.Duration) time.Duration {
	if movesNodes && budget < membershipWait {
		return membershipWait
	}
	return budget
}

// Styles are the reports' styles of kinds, for the meta line.
func Styles(kinds []string) map[string]history.FaultStyle {
	out := map[string]history.FaultStyle{}
	for _, name := range kinds {
		if k := lookup(name); k != nil {
			out[name] = history.FaultStyle{Color: k.Color}
		}
	}
	return out
}

// ParseKinds parses `none`, `all` or a comma list of kinds.
func ParseKinds(list string) ([]string, error) {
	list = strings.TrimSpace(list)
	switch list {
	case "", "none":
		return nil, nil
	case "all":
		return All(), nil
	}
	var out []string
	for _, k := range strings.Split(list, ",") {
		k = strings.TrimSpace(k)
		if lookup(k) == nil {
			return nil, unknown(k)
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}
