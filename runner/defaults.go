package runner

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// Defaults is a run's configuration before the caller or a flag changes it:
// the one place `lockcheck run`'s flags, the public API and Run's zero
// fields take their values from. Values that belong to a lower package
// (clients, fault interval, pause extra) are that package's defaults.
func Defaults() Test {
	return Test{
		Workload:    workload.ShapeCycle,
		Clients:     workload.DefaultClients,
		Locks:       1,
		Time:        60 * time.Second,
		Store:       "store",
		Interval:    nemesis.DefaultInterval,
		Quiet:       5 * time.Second,
		TTL:         3 * time.Second,
		PauseExtra:  nemesis.DefaultClientPauseExtra,
		HealTimeout: 3 * time.Minute,
		// The liveness settings and client-kill's.
		AcquireTimeout: checker.DefaultAcquireTimeout,
		KillRestart:    nemesis.DefaultClientKillRestart,
		KillTarget:     nemesis.KillTargetAny,
	}
}

// Limits of a run's settings (Validate).
const (
	MaxClients = 100
	MaxLocks   = 100
)

// fillDefaults sets the fields whose zero means nothing (no clients, no
// time, no TTL) from Defaults. Quiet and PauseExtra are taken as given:
// zero is no quiet phase, a pause of exactly the lease.
func (t *Test) fillDefaults() {
	d := Defaults()
	fill := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	if t.Clients == 0 {
		t.Clients = d.Clients
	}
	if t.Locks == 0 {
		t.Locks = d.Locks
	}
	if t.Store == "" {
		t.Store = d.Store
	}
	if t.Workload == "" {
		t.Workload = d.Workload
	}
	fill(&t.Time, d.Time)
	fill(&t.Interval, d.Interval)
	fill(&t.TTL, d.TTL)
	fill(&t.HealTimeout, d.HealTimeout)
	fill(&t.AcquireTimeout, d.AcquireTimeout)
	if t.KillTarget == "" {
		t.KillTarget = d.KillTarget
	}
}

// Validate tells what is wrong with t's settings, naming each as its
// `lockcheck run` flag does.
func (t Test) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	register := t.Workload == workload.ShapeRegister
	if t.Recipe.Setup == nil && !register {
		bad("no lock recipe")
	}
	if !slices.Contains(workload.Shapes, t.Workload) && !register {
		bad("workload must be one of %v, got %q", append(slices.Clone(workload.Shapes), workload.ShapeRegister), t.Workload)
	}
	if register {
		for _, k := range t.Nemesis {
			if nemesis.ScopeOf(k) == nemesis.ScopeClient {
				bad("nemesis %s acts on a lock's clients: the register workload takes the node faults", k)
			}
		}
	}
	if t.Clients < 1 || t.Clients > MaxClients {
		bad("clients must be 1..%d, got %d", MaxClients, t.Clients)
	}
	if t.Locks < 1 || t.Locks > MaxLocks {
		bad("locks must be 1..%d, got %d", MaxLocks, t.Locks)
	}
	if t.Time <= 0 {
		bad("time must be positive, got %v", t.Time)
	}
	if t.Interval <= 0 {
		bad("interval must be positive, got %v", t.Interval)
	}
	if t.TTL < time.Second {
		bad("ttl must be at least 1s, got %v", t.TTL)
	}
	if (t.SkewMin != 0 || t.SkewMax != 0) && (t.SkewMin <= 0 || t.SkewMax < t.SkewMin) {
		bad("skew bounds must be 0 < skew-min <= skew-max, got %v and %v", t.SkewMin, t.SkewMax)
	}
	if t.Quiet < 0 || t.PauseExtra < 0 {
		bad("quiet and pause-extra must not be negative, got %v and %v", t.Quiet, t.PauseExtra)
	}
	for _, k := range t.Nemesis {
		if nemesis.Aimed(k) && !t.PinClients {
			bad("nemesis %s is aimed by the clients' coordinators: it needs --pin-clients", k)
		}
	}
	if t.DCLocal && !t.Recipe.DCLocal {
		bad("dc-local: lock %s does not take LOCAL_SERIAL/LOCAL_QUORUM (those that do: %s)", t.Recipe.Name, strings.Join(DCLocalRecipes(), ", "))
	}
	if t.RetireStuck && t.Workload == workload.ShapeRegister {
		bad("retire-stuck: the register workload takes no lock, so none can be stuck")
	}
	if t.AcquireTimeout <= 0 {
		bad("acquire-timeout must be positive, got %v", t.AcquireTimeout)
	}
	if t.StuckBound < 0 || t.StuckBound > 0 && t.StuckBound < t.TTL {
		bad("stuck-bound %v is below the TTL %v: every lease waited out after its holder died would be called stuck", t.StuckBound, t.TTL)
	}
	if err := nemesis.CheckClientKill(t.KillRestart, t.KillTarget); err != nil {
		bad("kill-restart, kill-target: %v", err)
	} else if slices.Contains(t.Nemesis, nemesis.ClientKill) && t.KillRestart >= t.Time {
		bad("kill-restart %v is not shorter than the run's time %v: a killed client would never come back", t.KillRestart, t.Time)
	}
	if t.HealTimeout <= 0 {
		bad("heal timeout must be positive, got %v", t.HealTimeout)
	}
	return errors.Join(errs...)
}
