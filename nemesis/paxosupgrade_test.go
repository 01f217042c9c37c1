package nemesis

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// The fake's Paxos variant (PaxosNode): "" is v1, the cluster's.

func (f *fakeNode) PaxosVariant(context.Context) (live, file string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return cmpOr(f.paxosLive, "v1"), cmpOr(f.paxosFile, "v1"), nil
}

func (f *fakeNode) StartedPaxos() string { return "v1" }

func (f *fakeNode) SetPaxosVariant(_ context.Context, variant string, restart bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.paxosFails {
		return errors.New(f.name + ": the MBean refused the variant")
	}
	f.paxosFile, f.paxosLive = variant, variant
	f.switched("paxos", variant, restart)
	return nil
}

// switched records a setting's switch (f.mu held): "paxos v2 live".
func (f *fakeNode) switched(setting, value string, restart bool) {
	how := "live"
	if restart {
		how = "restart"
	}
	f.calls = append(f.calls, setting+" "+value+" "+how)
}

func (f *fakeNode) PaxosStatePurging(context.Context) (live, file string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return cmpOr(f.purgeLive, "legacy"), cmpOr(f.purgeFile, "legacy"), nil
}

func (f *fakeNode) StartedPurging() string { return "legacy" }

func (f *fakeNode) SetPaxosStatePurging(_ context.Context, mode string, restart bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.purgeFile, f.purgeLive = mode, mode
	f.switched("purging", mode, restart)
	return nil
}

func (f *fakeNode) RepairPaxos(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "repair paxos")
	return nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func paxosOfFakes(fs []*fakeNode) []string {
	var out []string
	for _, f := range fs {
		live, file, _ := f.PaxosVariant(context.Background())
		out = append(out, live+"/"+file)
	}
	return out
}

func purgingOfFakes(fs []*fakeNode) []string {
	var out []string
	for _, f := range fs {
		live, file, _ := f.PaxosStatePurging(context.Background())
		out = append(out, live+"/"+file)
	}
	return out
}

// A window switches every node to v2 in its drawn order, then repairs
// Paxos from each, then switches every node's paxos_state_purging from
// legacy to repaired and repairs again (the documented path); its stop
// records what was done. The run's heal leaves the upgrade in place
// (one-way); the next run's HealLeftovers reverts it and records that it
// did.
func TestPaxosUpgrade(t *testing.T) {
	ts, fs := fakeCluster(3)
	rec := &memRec{}
	e := &Env{Targets: ts, Sched: rand.New(rand.NewPCG(7, 1)), rec: rec, Log: slog.New(slog.DiscardHandler)}
	inj := paxosUpgradeKind.New()
	stop, err := inj.Start(context.Background(), e, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	ops := rec.all()
	if len(ops) != 2 || ops[0].F != history.StartF(PaxosUpgrade) || ops[1].F != history.StopF(PaxosUpgrade) {
		t.Fatalf("lines = %v, want a start and a stop of %s", ops, PaxosUpgrade)
	}
	var start PaxosUpgradeStart
	var end PaxosUpgradeStop
	if err := json.Unmarshal(ops[0].Value, &start); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(ops[1].Value, &end); err != nil {
		t.Fatal(err)
	}
	if start.From != "v1" || start.To != "v2" || len(start.Order) != 3 || (start.How != UpgradeLive && start.How != UpgradeRestart) ||
		start.PurgingFrom != "legacy" || start.PurgingTo != "repaired" {
		t.Errorf("start = %+v", start)
	}
	sorted := slices.Sorted(slices.Values(start.Order))
	if !slices.Equal(sorted, []string{"n1", "n2", "n3"}) {
		t.Errorf("order %v: want every node once", start.Order)
	}
	if !slices.Equal(end.Switched, start.Order) || !slices.Equal(end.Repaired, start.Order) || end.Error != "" {
		t.Errorf("stop = %+v, want switched and repaired in the order %v", end, start.Order)
	}
	if !slices.Equal(end.Purged, start.Order) || !slices.Equal(end.RepairedAfter, start.Order) {
		t.Errorf("stop = %+v, want purging switched and repaired again in the order %v", end, start.Order)
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		if end.Variants[n] != "v2" || end.Purgings[n] != "repaired" {
			t.Errorf("stop variants = %v, purgings %v: want v2 and repaired on every node", end.Variants, end.Purgings)
		}
	}
	// Per node: the variant, a repair, the purging, a repair again; and
	// across nodes every variant switch before any purging switch (which
	// Cassandra wants only once every node runs v2).
	want := []string{"paxos v2 " + start.How, "repair paxos", "purging repaired " + start.How, "repair paxos"}
	for _, f := range fs {
		if !slices.Equal(f.calls, want) {
			t.Errorf("%s calls = %v, want %v", f.name, f.calls, want)
		}
	}

	// The run's heal: the upgrade stays.
	if _, err := resetAll(context.Background(), e, []fault{{&paxosUpgradeKind, inj}}, ts); err != nil {
		t.Fatal(err)
	}
	if got := paxosOfFakes(fs); !slices.Equal(got, []string{"v2/v2", "v2/v2", "v2/v2"}) {
		t.Fatalf("after the run's heal: %v, want every node still on v2", got)
	}
	if got := purgingOfFakes(fs); !slices.Equal(got, []string{"repaired/repaired", "repaired/repaired", "repaired/repaired"}) {
		t.Fatalf("after the run's heal: purging %v, want every node still on repaired", got)
	}

	// The next run's start: reverted, and recorded.
	next := &memRec{}
	left, err := HealLeftovers(context.Background(), ts, next, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if got := paxosOfFakes(fs); !slices.Equal(got, []string{"v1/v1", "v1/v1", "v1/v1"}) {
		t.Errorf("after HealLeftovers: %v, want every node back on v1", got)
	}
	if got := purgingOfFakes(fs); !slices.Equal(got, []string{"legacy/legacy", "legacy/legacy", "legacy/legacy"}) {
		t.Errorf("after HealLeftovers: purging %v, want every node back on legacy", got)
	}
	// The purging went back before the variant, while the node ran v2.
	for _, f := range fs {
		if n := len(f.calls); n < 2 || f.calls[n-2] != "purging legacy live" || f.calls[n-1] != "paxos v1 live" {
			t.Errorf("%s calls = %v, want the purging reverted, then the variant", f.name, f.calls)
		}
	}
	if len(left) != 3 {
		t.Fatalf("leftovers = %+v, want one per node", left)
	}
	for _, l := range left {
		if !slices.Contains(l.Healed, PaxosUpgrade) {
			t.Errorf("leftover %+v does not name %s", l, PaxosUpgrade)
		}
	}
	if n := len(next.all()); n != 3 {
		t.Errorf("%d heal-leftover lines recorded, want 3", n)
	}
}

// The purging is switched only once every node runs v2: a node whose
// variant could not be switched stops the step before any node's purging
// changes, and the stop line says why.
func TestPaxosUpgradePurgingWaitsForV2(t *testing.T) {
	ts, fs := fakeCluster(3)
	fs[1].paxosFails = true
	rec := &memRec{}
	e := &Env{Targets: ts, Sched: rand.New(rand.NewPCG(7, 1)), rec: rec, Log: slog.New(slog.DiscardHandler)}
	stop, err := paxosUpgradeKind.New().Start(context.Background(), e, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	var end PaxosUpgradeStop
	if err := json.Unmarshal(rec.all()[1].Value, &end); err != nil {
		t.Fatal(err)
	}
	if len(end.Purged) != 0 || len(end.RepairedAfter) != 0 || !strings.Contains(end.Error, "paxos_state_purging not switched: n2") {
		t.Errorf("stop = %+v, want no purging switched and the reason named", end)
	}
	if got := purgingOfFakes(fs); !slices.Equal(got, []string{"legacy/legacy", "legacy/legacy", "legacy/legacy"}) {
		t.Errorf("purging %v, want legacy everywhere", got)
	}
	if end.Purgings["n1"] != "legacy" {
		t.Errorf("stop purgings = %v, want each node's as it reports it", end.Purgings)
	}
}

// A node whose switch was cut between its configuration and the running
// node is finished by Reset (forward), never switched back: the variant's
// switch, and the purging's.
func TestPaxosUpgradeResetFinishes(t *testing.T) {
	ts, fs := fakeCluster(3)
	fs[0].paxosFile = "v2" // configuration written, node not yet switched
	fs[2].paxosLive, fs[2].paxosFile = "v2", "v2"
	fs[2].purgeFile = "repaired"
	e := &Env{Targets: ts, Log: slog.New(slog.DiscardHandler)}
	inj := paxosUpgradeKind.New()
	for i, t0 := range ts {
		healed, err := inj.Reset(context.Background(), e, t0)
		if err != nil {
			t.Fatal(err)
		}
		if healed != (i != 1) {
			t.Errorf("%s: healed = %v", t0.Name, healed)
		}
	}
	if got := paxosOfFakes(fs); !slices.Equal(got, []string{"v2/v2", "v1/v1", "v2/v2"}) {
		t.Errorf("after Reset: %v, want n1 finished on v2 and n2 untouched", got)
	}
	if got := purgingOfFakes(fs); !slices.Equal(got, []string{"legacy/legacy", "legacy/legacy", "repaired/repaired"}) {
		t.Errorf("after Reset: purging %v, want n3 finished on repaired", got)
	}
}

// A replay's step gives the way and the order; nodes already on v2 are
// not switched again.
func TestPaxosUpgradeReplay(t *testing.T) {
	ts, fs := fakeCluster(3)
	fs[2].paxosLive, fs[2].paxosFile = "v2", "v2"
	rec := &memRec{}
	e := &Env{Targets: ts, Sched: rand.New(rand.NewPCG(1, 1)), rec: rec, Log: slog.New(slog.DiscardHandler)}
	v, _ := json.Marshal(PaxosUpgradeStart{How: UpgradeLive, Order: []string{"n3", "n2", "n1"}})
	e.step = &Step{Kind: PaxosUpgrade, Value: v}
	stop, err := paxosUpgradeKind.New().Start(context.Background(), e, 0)
	e.step = nil
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	var end PaxosUpgradeStop
	if err := json.Unmarshal(rec.all()[1].Value, &end); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(end.Switched, []string{"n2", "n1"}) || !slices.Equal(end.Repaired, []string{"n3", "n2", "n1"}) {
		t.Errorf("stop = %+v, want n2 then n1 switched (n3 was on v2), all three repaired", end)
	}
	// A step of a history from before the purging step: replayed as it
	// happened, with no purging switch.
	if end.Purged != nil || end.RepairedAfter != nil || end.Purgings != nil {
		t.Errorf("stop = %+v: a step without purging_to switched the purging", end)
	}
	if !slices.Equal(fs[0].calls, []string{"paxos v2 live", "repair paxos"}) {
		t.Errorf("n1 calls = %v, want a live switch and a repair", fs[0].calls)
	}
	// A step that names the purging replays it too.
	ts, fs = fakeCluster(3)
	rec = &memRec{}
	e = &Env{Targets: ts, Sched: rand.New(rand.NewPCG(1, 1)), rec: rec, Log: slog.New(slog.DiscardHandler)}
	v, _ = json.Marshal(PaxosUpgradeStart{How: UpgradeRestart, Order: []string{"n1", "n2", "n3"}, PurgingFrom: "legacy", PurgingTo: "repaired"})
	e.step = &Step{Kind: PaxosUpgrade, Value: v}
	stop, err = paxosUpgradeKind.New().Start(context.Background(), e, 0)
	e.step = nil
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"paxos v2 restart", "repair paxos", "purging repaired restart", "repair paxos"}; !slices.Equal(fs[1].calls, want) {
		t.Errorf("n2 calls = %v, want %v", fs[1].calls, want)
	}

	v, _ = json.Marshal(PaxosUpgradeStart{Order: []string{"n9"}})
	e.step = &Step{Kind: PaxosUpgrade, Value: v}
	if _, err := paxosUpgradeKind.New().Start(context.Background(), e, 0); err == nil {
		t.Error("a step naming a node the cluster lacks started")
	}
}
