package nemesis

import (
	"context"
	"slices"
	"time"
)

// RackPowerLoss cuts the power of every node at once: a rack's feed fails,
// and lockcheck's clusters are one rack (Cassandra's rack1). Every replica
// then forgets together what it had acknowledged and not yet synced.
const RackPowerLoss = "rack-power-loss"

type rackPowerLoss struct{}

func (*rackPowerLoss) restartsNodes() {}
func (*rackPowerLoss) Name() string   { return RackPowerLoss }
func (*rackPowerLoss) Scope() Scope   { return ScopeNode }
func (*rackPowerLoss) Color() string  { return "#8c564b" }

func (*rackPowerLoss) Needs(t Target) error { return needsLazyFS(t) }

func (*rackPowerLoss) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	return cutPower(ctx, e, RackPowerLoss, slices.Clone(e.Targets))
}

func (*rackPowerLoss) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	return restartStopped(ctx, t)
}
