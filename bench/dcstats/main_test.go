package main

import (
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

func TestCutLabel(t *testing.T) {
	dcs := map[string][]string{"dc1": {"n1", "n2", "n3"}, "dc2": {"n4", "n5"}}
	for _, tt := range []struct {
		name string
		v    history.DCPartitionStart
		want string
	}{
		{"both", history.DCPartitionStart{Mode: "both", DCs: dcs, Grudge: history.Grudge{"n1": {"n4"}, "n4": {"n1"}}}, "cut both ways"},
		{"dc2 drops", history.DCPartitionStart{Mode: "one-way", DCs: dcs, Grudge: history.Grudge{"n4": {"n1", "n2", "n3"}, "n5": {"n1", "n2", "n3"}}}, "cut one way, dc2 deaf"},
		{"dc1 drops", history.DCPartitionStart{Mode: "one-way", DCs: dcs, Grudge: history.Grudge{"n1": {"n4", "n5"}}}, "cut one way, dc1 deaf"},
	} {
		if got := cutLabel(tt.v); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestClientDCs(t *testing.T) {
	got, err := clientDCs("0=dc1 1=dc2 2=dc1")
	if err != nil || len(got) != 3 || got[1] != "dc2" || got[2] != "dc1" {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", "0=dc1 x", "a=dc1", "0="} {
		if _, err := clientDCs(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}
