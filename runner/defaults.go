package runner

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/spec"
	"github.com/lockcheck/lockcheck/workload"
)

// Defaults is a run's configuration before the caller or a flag changes it:
// spec.Defaults, with no recipe yet.
func Defaults() Test { return Test{Spec: spec.Defaults()} }

// Limits of a run's settings (Validate): the Spec's.
const (
	MaxClients = spec.MaxClients
	MaxLocks   = spec.MaxLocks
)

// fillDefaults sets the fields whose zero means nothing (spec.Spec.Fill).
func (t *Test) fillDefaults() { t.Spec.Fill() }

// Validate tells what is wrong with t's settings, naming each as its
// `lockcheck run` flag does: the Spec's own rules (spec.Spec.Validate) and
// those that need the recipe, the workload's shapes and the fault kinds.
func (t Test) Validate() error {
	errs := []error{t.Spec.Validate()}
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	register := t.Workload == workload.ShapeRegister
	if t.Recipe.Setup == nil && !register {
		bad("no lock recipe")
	}
	if !slices.Contains(workload.Shapes, t.Workload) && !register {
		bad("--workload must be one of %v, got %q", append(slices.Clone(workload.Shapes), workload.ShapeRegister), t.Workload)
	}
	for _, k := range t.Nemesis {
		if !slices.Contains(nemesis.Kinds, k) {
			bad("--nemesis: unknown fault kind %q (one of %s)", k, strings.Join(nemesis.Kinds, ", "))
			continue
		}
		if register && nemesis.ScopeOf(k) == nemesis.ScopeClient && !nemesis.AnyClients(k) {
			bad("--nemesis %s acts on a lock's clients: the register workload takes the node faults and %s", k, nemesis.ClientHold)
		}
		if nemesis.Aimed(k) && !t.PinClients {
			bad("--nemesis %s is aimed by the clients' coordinators: it needs --pin-clients", k)
		}
	}
	// The delay's sign is the Spec's check; its target's names and its
	// bound by the run's time are the nemesis's and the run's.
	if err := nemesis.CheckClientKill(0, t.KillTarget); err != nil {
		bad("--kill-target: %v", err)
	} else if slices.Contains(t.Nemesis, nemesis.ClientKill) && t.KillRestart >= t.Time {
		bad("--kill-restart %v is not shorter than the run's --time %v: a killed client would never come back", t.KillRestart, t.Time)
	}
	if t.AimWrite && !slices.ContainsFunc(t.Nemesis, func(k string) bool { return k == nemesis.CoordNetDelay || k == nemesis.CoordSlowNode }) {
		bad("--aim-write without --nemesis %s or %s: it aims those faults' windows", nemesis.CoordNetDelay, nemesis.CoordSlowNode)
	}
	if _, _, err := t.netBounds(); err != nil {
		bad("--net-delay, --net-jitter, --net-rate: %v", err)
	}
	if s, err := t.slowness(); err != nil {
		bad("%v", err)
	} else if err := s.Validate(t.Nemesis, t.Interval); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			bad("%s", line)
		}
	}
	if t.DCLocal && !t.Recipe.DCLocal {
		bad("--dc-local: lock %s does not take LOCAL_SERIAL/LOCAL_QUORUM (those that do: %s)", t.Recipe.Name, strings.Join(DCLocalRecipes(), ", "))
	}
	return errors.Join(errs...)
}
