package runner

import (
	"testing"
	"time"
)

func TestTimingSaysEveryPhase(t *testing.T) {
	s := time.Second
	tm := Timing{Requested: 20 * s, Lease: 7 * s, Prepare: s / 2, Leftovers: 2 * s, Setup: 3 * s, Run: 20 * s,
		Heal: s, Quiet: 3 * s, Final: s / 2, Close: 0, Logs: s / 2, Check: s / 2, Total: 39 * s}
	if got, want := tm.Own(), 32*s; got != want {
		t.Errorf("Own = %v, want %v (the lease's wait left out)", got, want)
	}
	if got, want := tm.Overhead(), 12*s; got != want {
		t.Errorf("Overhead = %v, want %v", got, want)
	}
	if got, want := tm.Ratio(), 1.6; got != want {
		t.Errorf("Ratio = %v, want %v", got, want)
	}
	want := "32s for 20s (1.60x): lease 7s, prepare 500ms, leftovers 2s, setup 3s, run 20s, heal 1s, quiet 3s, final 500ms, logs 500ms, check 500ms"
	if got := tm.String(); got != want {
		t.Errorf("String =\n%s\nwant\n%s", got, want)
	}
	two := tm.Add(tm)
	if two.Total != 2*tm.Total || two.Requested != 2*tm.Requested || two.Setup != 2*tm.Setup || two.Ratio() != tm.Ratio() {
		t.Errorf("Add: %+v", two)
	}
	if (Timing{Total: s}).Ratio() != 0 {
		t.Error("Ratio of a run that asked no time: want 0")
	}
}
