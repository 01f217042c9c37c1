package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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

// Kind is one fault kind: a value in the kinds table below. A Kind value
// belongs to one nemesis (it keeps the state its heal needs); the table
// makes a fresh one per nemesis.
type Kind interface {
	// Name is the kind as --nemesis takes it and as the history names it
	// (history.StartF(Name())).
	Name() string
	Scope() Scope
	// Color is the CSS colour reports draw the kind's fault windows in.
	Color() string
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
// kind is one file with its type and one row here.
var table = []func() Kind{
	func() Kind { return &partition{} },
	func() Kind { return &pause{} },
	func() Kind { return &kill{} },
	func() Kind { return &clock{} },
	func() Kind { return &clientPause{} },
	func() Kind { return &clientClock{} },
	func() Kind { return &loss{} },
	func() Kind { return &powerLoss{} },
	func() Kind { return &rackPowerLoss{} },
	func() Kind { return &coordPartition{} },
	func() Kind { return &coordClock{} },
}

// Kinds are the names of every fault kind, in table order.
var Kinds = func() []string {
	var out []string
	for _, mk := range table {
		out = append(out, mk().Name())
	}
	return out
}()

// All is what `all` expands to: every kind that works on any cluster, in
// table order. Kinds that need something of the nodes (power-loss: a lazy
// filesystem) are named one by one.
func All() []string {
	var out []string
	for _, mk := range table {
		if k := mk(); !isNeeder(k) && !isAimed(k) {
			out = append(out, k.Name())
		}
	}
	return out
}

func isNeeder(k Kind) bool { _, ok := k.(needer); return ok }

// aimed is a kind aimed by the clients' coordinators (Env.Pins): without
// clients pinned to nodes it has nothing to aim at, so `all` leaves it out
// and New refuses it with the reason.
type aimed interface {
	aim(e *Env) error
}

func isAimed(k Kind) bool { _, ok := k.(aimed); return ok }

// Aimed says whether the kind of that name is aimed by the clients'
// coordinators (it needs `run --pin-clients`).
func Aimed(name string) bool {
	k, err := NewKind(name)
	return err == nil && isAimed(k)
}

// needPins is the aim check of the kinds aimed by Env.Pins: clients on at
// least two nodes.
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

// NewKind makes a fresh kind by name.
func NewKind(name string) (Kind, error) {
	for _, mk := range table {
		if k := mk(); k.Name() == name {
			return k, nil
		}
	}
	return nil, fmt.Errorf("nemesis: unknown fault %q (want none, all or a comma list of %s)", name, strings.Join(Kinds, ", "))
}

// ScopeOf is the scope of a kind by name (ScopeNode for an unknown name:
// New rejects those).
func ScopeOf(name string) Scope {
	if k, err := NewKind(name); err == nil {
		return k.Scope()
	}
	return ScopeNode
}

// AnyNodeKind says whether kinds hold a node fault (the run then waits for
// a healthy cluster after the heal).
func AnyNodeKind(kinds []string) bool {
	return slices.ContainsFunc(kinds, func(k string) bool { return ScopeOf(k) == ScopeNode })
}

// Styles are the reports' styles of kinds, for the meta line.
func Styles(kinds []string) map[string]history.FaultStyle {
	out := map[string]history.FaultStyle{}
	for _, name := range kinds {
		if k, err := NewKind(name); err == nil {
			out[name] = history.FaultStyle{Color: k.Color()}
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
		if _, err := NewKind(k); err != nil {
			return nil, err
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}
