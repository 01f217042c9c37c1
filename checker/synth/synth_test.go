package synth_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/checker/synth"
)

// The generator's histories are what the benchmarks measure: they must be
// valid histories with the verdicts they claim.
func TestGeneratedVerdicts(t *testing.T) {
	tests := []struct {
		cfg  synth.Config
		want checker.Verdict
		kind string
	}{
		{synth.Config{Events: 20000, Clients: 20, Locks: 50, FailRate: 0.05, InfoRate: 0.05, Seed: 2}, checker.Valid, ""},
		{synth.Config{Events: 20000, Clients: 30, Locks: 1, FailRate: 0.05, InfoRate: 0.1, Lease: 50 * time.Millisecond, Nemesis: time.Second, Seed: 3}, checker.Valid, ""},
		{synth.Config{Events: 20000, Clients: 20, Locks: 50, Seed: 4, Anomaly: synth.AnomalyOverlap}, checker.Invalid, checker.KindOverlap},
		{synth.Config{Events: 20000, Clients: 30, Locks: 1, InfoRate: 0.1, Seed: 5, Anomaly: synth.AnomalyLost}, checker.Invalid, checker.KindLostAdd},
	}
	for _, tt := range tests {
		ops := synth.Ops(tt.cfg)
		if n := len(ops); n < tt.cfg.Events || n > tt.cfg.Events+2*tt.cfg.Clients*4+100 {
			t.Errorf("%+v: %d ops", tt.cfg, n)
		}
		res, err := checker.Check(context.Background(), ops)
		if err != nil {
			t.Fatalf("%+v: %v", tt.cfg, err)
		}
		if res.Verdict != tt.want {
			t.Fatalf("%+v: verdict %s, want %s: %+v", tt.cfg, res.Verdict, tt.want, res.Checks)
		}
		if tt.kind != "" && (len(res.Anomalies) == 0 || res.Anomalies[0].Kind != tt.kind) {
			t.Errorf("%+v: anomalies %+v", tt.cfg, res.Anomalies)
		}
		if res.Stats.ByF["acquire"].Info == 0 && tt.cfg.InfoRate > 0 {
			t.Errorf("%+v: no info acquire", tt.cfg)
		}
	}
}
