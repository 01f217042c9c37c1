package checker

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The latency histogram's quantiles are the exact ones within its bucket
// width (0.2%), and its maximum is exact.
func TestLatencyHistogramMatchesExactQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 10, 1000, 100000} {
		var h latHist
		d := make([]int64, n)
		for i := range d {
			d[i] = int64(r.ExpFloat64() * 2e6)
			if i%7 == 0 {
				d[i] = int64(r.IntN(900)) // exact below 1024 ns
			}
			h.add(d[i])
		}
		slices.Sort(d)
		for _, q := range []float64{0, 0.5, 0.9, 0.99, 1} {
			want := float64(d[int(q*float64(n-1)+0.5)]) / 1e6
			got := h.at(q)
			if math.Abs(got-want) > want*0.002+1e-3 {
				t.Errorf("n=%d q=%v: %v ms, exact %v ms", n, q, got, want)
			}
		}
		if got, want := percentiles(&h).Max, nsToMS(d[n-1]); got != want {
			t.Errorf("n=%d: max %v, want %v", n, got, want)
		}
	}
}
