package reports

import (
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/faultkind"
	// The fault kinds' causes: the nemesis's table registers them with
	// faultkind, as it does in every program that runs faults.
	_ "github.com/lockcheck/lockcheck/nemesis"
)

// faultkind repeats the checker's anomaly names (it cannot import the
// checker): they must be the checker's.
func TestFaultkindAnomaliesAreTheCheckers(t *testing.T) {
	checkers := []string{checker.KindOverlap, checker.KindNonLinearizable, checker.KindLostAdd, checker.KindDuplicate,
		checker.KindStaleWrite, checker.KindTokenOrder, checker.KindStuckLock}
	if len(checkers) != len(faultkind.Anomalies) {
		t.Fatalf("faultkind names %d anomaly kinds, the test %d", len(faultkind.Anomalies), len(checkers))
	}
	for i, k := range faultkind.Anomalies {
		if k != checkers[i] {
			t.Errorf("faultkind's anomaly %q, the checker's %q", k, checkers[i])
		}
	}
	for _, r := range faultkind.Causes() {
		for _, a := range r.Anomalies {
			found := false
			for _, k := range checkers {
				found = found || a == k
			}
			if !found {
				t.Errorf("%s's cause explains %q, which the checker never reports", r.Kind, a)
			}
		}
	}
}
