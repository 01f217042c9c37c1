package nemesis

import (
	"context"
	"slices"
	"time"
)

// RackPowerLoss cuts the power of several nodes at once (a rack, a data
// centre's feed): at least two, so that a quorum can forget together what it
// had acknowledged and not yet synced.
const RackPowerLoss = "rack-power-loss"

type rackPowerLoss struct{}

func (*rackPowerLoss) Name() string  { return RackPowerLoss }
func (*rackPowerLoss) Scope() Scope  { return ScopeNode }
func (*rackPowerLoss) Color() string { return "#8c564b" }

func (*rackPowerLoss) Needs(t Target) error { return needsLazyFS(t) }

func (*rackPowerLoss) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	n := len(e.Targets)
	k := n
	if n > 2 {
		k = 2 + e.Sched.IntN(n-1) // 2..n
	}
	idx := e.Sched.Perm(n)[:k]
	slices.Sort(idx)
	var rack []Target
	for _, i := range idx {
		rack = append(rack, e.Targets[i])
	}
	return cutPower(ctx, e, RackPowerLoss, rack)
}

func (*rackPowerLoss) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	return restartStopped(ctx, t)
}
