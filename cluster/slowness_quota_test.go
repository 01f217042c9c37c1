package cluster

import "testing"

// A share is a quota of a 100 ms period down to 1 %, below it 1 ms of CPU
// per a longer period (the kernel takes no quota under 1 ms), up to 1 s.
func TestCFSQuota(t *testing.T) {
	for _, tc := range []struct {
		share         float64
		period, quota int64
	}{
		{0.5, 100000, 50000},
		{0.05, 100000, 5000},
		{0.01, 100000, 1000},
		{0.005, 200000, 1000},
		{0.002, 500000, 1000},
		{0.001, 1000000, 1000},
	} {
		p, q := cfsQuota(tc.share)
		if p != tc.period || q != tc.quota {
			t.Errorf("share %g: period %d quota %d µs, want %d and %d", tc.share, p, q, tc.period, tc.quota)
		}
		if got := float64(q) / float64(p); got < tc.share*0.99 || got > tc.share*1.01 {
			t.Errorf("share %g: quota/period %g", tc.share, got)
		}
	}
}
