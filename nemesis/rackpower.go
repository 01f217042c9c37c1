package nemesis

import (
	"context"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// RackPowerLoss cuts the power of every node at once: a rack's feed fails,
// and lockcheck's clusters are one rack (Cassandra's rack1). Every replica
// then forgets together what it had acknowledged and not yet synced.
const RackPowerLoss = history.KindRackPowerLoss

var rackPowerLossKind = Kind{
	Name: RackPowerLoss, Scope: ScopeNode, Color: "#8c564b",
	Doc: "Cuts the power of every node at once (a rack's feed fails): every replica forgets together what it had " +
		"acknowledged and not yet fsynced; the stop starts them all again.",
	Needs:    []Capability{CapPower, CapRestart},
	Restarts: true,
	StartValue: history.PowerStart{How: "power off", UnsyncedBytes: map[string]int64{"n1": 4096, "n2": 0, "n3": -1},
		UnsyncedFiles: map[string]int{"n1": 2, "n2": 0, "n3": -1}},
	StopValue: history.PowerStop{How: "power on"},
	Cause:     &powerCause,
	New:       func() Injector { return &rackPowerLoss{} },
}

type rackPowerLoss struct{}

func (*rackPowerLoss) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	return cutPower(ctx, e, RackPowerLoss, slices.Clone(e.Targets))
}

func (*rackPowerLoss) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	return restartStopped(ctx, t)
}
