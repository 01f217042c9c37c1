package faultcap

import (
	"slices"
	"testing"
)

// Every capability a backend may declare has the doc its refusal quotes,
// and All lists the baseline first.
func TestDocs(t *testing.T) {
	all := All()
	if !slices.Equal(all[:len(Baseline)], Baseline) {
		t.Errorf("All() = %v, want the baseline %v first", all, Baseline)
	}
	for _, c := range []Capability{IPTables, Clock, Signals, Restart, Power, Membership, NetDelay, NetRate, CPU, Stall, DiskLatency, PaxosUpgrade, Maintenance} {
		if Doc(c) == "" {
			t.Errorf("%s has no doc", c)
		}
		if !slices.Contains(all, c) {
			t.Errorf("All() lacks %s", c)
		}
	}
	if got := Missing([]Capability{IPTables, NetDelay}, []Capability{IPTables}); !slices.Equal(got, []Capability{NetDelay}) {
		t.Errorf("Missing = %v, want [net-delay]", got)
	}
}
