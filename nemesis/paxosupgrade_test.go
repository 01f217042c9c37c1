package nemesis

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"slices"
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
	f.paxosFile, f.paxosLive = variant, variant
	how := "live"
	if restart {
		how = "restart"
	}
	f.calls = append(f.calls, "paxos "+variant+" "+how)
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

// A window switches every node to v2 in its drawn order, then repairs
// Paxos from each; its stop records what was done. The run's heal leaves
// the upgrade in place (one-way); the next run's HealLeftovers reverts it
// and records that it did.
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
	if start.From != "v1" || start.To != "v2" || len(start.Order) != 3 || (start.How != UpgradeLive && start.How != UpgradeRestart) {
		t.Errorf("start = %+v", start)
	}
	sorted := slices.Sorted(slices.Values(start.Order))
	if !slices.Equal(sorted, []string{"n1", "n2", "n3"}) {
		t.Errorf("order %v: want every node once", start.Order)
	}
	if !slices.Equal(end.Switched, start.Order) || !slices.Equal(end.Repaired, start.Order) || end.Error != "" {
		t.Errorf("stop = %+v, want switched and repaired in the order %v", end, start.Order)
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		if end.Variants[n] != "v2" {
			t.Errorf("stop variants = %v, want v2 on every node", end.Variants)
		}
	}
	// Every switch before any repair.
	for _, f := range fs {
		if len(f.calls) != 2 || f.calls[0] != "paxos v2 "+start.How || f.calls[1] != "repair paxos" {
			t.Errorf("%s calls = %v", f.name, f.calls)
		}
	}

	// The run's heal: the upgrade stays.
	if _, err := resetAll(context.Background(), e, []fault{{&paxosUpgradeKind, inj}}, ts); err != nil {
		t.Fatal(err)
	}
	if got := paxosOfFakes(fs); !slices.Equal(got, []string{"v2/v2", "v2/v2", "v2/v2"}) {
		t.Fatalf("after the run's heal: %v, want every node still on v2", got)
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

// A node whose switch was cut between its configuration and the running
// node is finished by Reset (forward), never switched back.
func TestPaxosUpgradeResetFinishes(t *testing.T) {
	ts, fs := fakeCluster(2)
	fs[0].paxosFile = "v2" // configuration written, node not yet switched
	e := &Env{Targets: ts, Log: slog.New(slog.DiscardHandler)}
	inj := paxosUpgradeKind.New()
	for i, t0 := range ts {
		healed, err := inj.Reset(context.Background(), e, t0)
		if err != nil {
			t.Fatal(err)
		}
		if healed != (i == 0) {
			t.Errorf("%s: healed = %v", t0.Name, healed)
		}
	}
	if got := paxosOfFakes(fs); !slices.Equal(got, []string{"v2/v2", "v1/v1"}) {
		t.Errorf("after Reset: %v, want n1 finished on v2 and n2 untouched", got)
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
	if fs[0].calls[0] != "paxos v2 live" {
		t.Errorf("n1 calls = %v, want a live switch", fs[0].calls)
	}
	v, _ = json.Marshal(PaxosUpgradeStart{Order: []string{"n9"}})
	e.step = &Step{Kind: PaxosUpgrade, Value: v}
	if _, err := paxosUpgradeKind.New().Start(context.Background(), e, 0); err == nil {
		t.Error("a step naming a node the cluster lacks started")
	}
}
