package nemesis

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// twoDCs are four fake nodes, n1 n2 in dc1 and n3 n4 in dc2.
func twoDCs() ([]Target, []*fakeNode) {
	ts, fs := fakeCluster(4)
	for i := range ts {
		ts[i].DC = "dc1"
		if i >= 2 {
			ts[i].DC = "dc2"
		}
	}
	return ts, fs
}

func TestDCPartitionCutsTheDataCentresApart(t *testing.T) {
	modes := map[string]bool{}
	for seed := range int64(16) {
		ts, fs := twoDCs()
		rec := &memRec{}
		n, err := New(ts, rec, WithKinds(DCPartition), WithSeed(seed))
		if err != nil {
			t.Fatal(err)
		}
		stop, err := n.kinds[0].Start(context.Background(), &n.env, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ops := rec.all()
		if len(ops) != 1 || ops[0].F != history.StartF(DCPartition) {
			t.Fatalf("lines %+v, want one start-dc-partition", ops)
		}
		var v history.DCPartitionStart
		if err := json.Unmarshal(ops[0].Value, &v); err != nil {
			t.Fatal(err)
		}
		modes[v.Mode] = true
		if !slices.Equal(v.DCs["dc1"], []string{"n1", "n2"}) || !slices.Equal(v.DCs["dc2"], []string{"n3", "n4"}) {
			t.Errorf("seed %d: dcs %v", seed, v.DCs)
		}
		other := map[string]string{"dc1": "dc2", "dc2": "dc1"}
		deaf := 0
		for i, f := range fs {
			dc := ts[i].DC
			rules := f.rules()
			if len(v.Grudge[f.name]) == 0 {
				if len(rules) > 0 {
					t.Errorf("seed %d: %s has no grudge but drops %v", seed, f.name, rules)
				}
				continue
			}
			deaf++
			if !slices.Equal(v.Grudge[f.name], v.DCs[other[dc]]) {
				t.Errorf("seed %d: %s (%s) drops %v, want the other data centre %v", seed, f.name, dc, v.Grudge[f.name], v.DCs[other[dc]])
			}
			for _, r := range rules {
				if !strings.HasPrefix(r, "LOCKCHECK-DC-PARTITION: ") {
					t.Errorf("seed %d: %s rule %q outside its chain", seed, f.name, r)
				}
			}
		}
		if want := map[string]int{"both": 4, "one-way": 2}[v.Mode]; deaf != want {
			t.Errorf("seed %d: mode %s, %d nodes drop, want %d", seed, v.Mode, deaf, want)
		}
		if err := stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if len(f.chains) > 0 || len(f.jumps) > 0 {
				t.Errorf("seed %d: %s keeps %v %v after the stop", seed, f.name, f.chains, f.jumps)
			}
		}
	}
	if !modes["both"] || !modes["one-way"] {
		t.Errorf("16 seeds drew modes %v, want both and one-way", modes)
	}
}

func TestDCPartitionNeedsTwoDCs(t *testing.T) {
	one, _ := fakeCluster(3)
	for i := range one {
		one[i].DC = "dc1"
	}
	unknown, _ := fakeCluster(3)
	for name, ts := range map[string][]Target{"one data centre": one, "data centres unknown": unknown} {
		_, err := New(ts, &memRec{}, WithKinds(DCPartition))
		if err == nil {
			t.Fatalf("%s: dc-partition accepted", name)
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "--dcs") {
			t.Errorf("%s: refusal %q: want one line that says --dcs", name, msg)
		}
	}
	if slices.Contains(All(), DCPartition) {
		t.Error("all holds dc-partition, which needs two data centres")
	}
}
