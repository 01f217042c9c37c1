package reports

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/history"
)

// chart is latency over time and throughput, with fault shading.
type chart struct {
	Height        float64
	P50, P99, Max string // polyline points
	YTicks        []tick // X holds the y coordinate
	Bars          []rect
	TTicks        []tick // throughput axis, X holds y
	Faults        []rect
	// Added are the slowness windows' added latency (addedLatency) as
	// dashed segments at that latency across each window: Y is the line's
	// height, X and W its extent.
	Added          []rect
	Ticks          []tick
	ThroughputTop  float64
	LatencyTop     float64
	ThroughputBase float64
	LatencyBase    float64
	Empty          bool
}

// newChart buckets completed client operations by completion time, and
// draws what the slowness windows added beside them.
func newChart(ops []history.Op, faults []faultView, added []addedWindow, end int64) chart {
	c := chart{LatencyBase: 20 + chartH, LatencyTop: 20}
	c.ThroughputTop = c.LatencyBase + 40
	c.ThroughputBase = c.ThroughputTop + chartH
	c.Height = c.ThroughputBase + 30
	lat := make([][]float64, buckets)
	var okN, failN, infoN [buckets]int
	open := map[int]int64{}
	for i := range ops {
		op := &ops[i]
		if op.Process < 0 {
			continue
		}
		if op.Type == history.Invoke {
			open[op.Process] = op.Time
			continue
		}
		inv, ok := open[op.Process]
		if !ok {
			continue
		}
		delete(open, op.Process)
		b := int(float64(op.Time) / float64(end) * buckets)
		b = min(max(b, 0), buckets-1)
		switch op.Type {
		case history.OK:
			okN[b]++
			lat[b] = append(lat[b], float64(op.Time-inv)/1e6)
		case history.Fail:
			failN[b]++
		default:
			infoN[b]++
		}
	}
	bw := plotWidth / buckets
	var p50s, p99s, maxs []float64
	top := 0.0
	for b := range buckets {
		l := lat[b]
		if len(l) == 0 {
			p50s, p99s, maxs = append(p50s, math.NaN()), append(p99s, math.NaN()), append(maxs, math.NaN())
			continue
		}
		slices.Sort(l)
		q := func(f float64) float64 { return l[int(f*float64(len(l)-1)+0.5)] }
		p50s, p99s, maxs = append(p50s, q(0.5)), append(p99s, q(0.99)), append(maxs, l[len(l)-1])
		top = math.Max(top, q(0.99))
	}
	if top == 0 {
		c.Empty = true
	}
	// The scale holds the added latency too: a stall far above the
	// operations' p99 is the comparison the reader wants.
	for _, a := range added {
		top = math.Max(top, float64(a.MS))
	}
	top = niceCeil(top * 1.1)
	yOf := func(v float64) float64 {
		return c.LatencyBase - math.Min(v/top, 1.02)*chartH
	}
	line := func(vs []float64) string {
		var b strings.Builder
		for i, v := range vs {
			if math.IsNaN(v) {
				continue
			}
			fmt.Fprintf(&b, "%.1f,%.1f ", plotLeft+(float64(i)+0.5)*bw, yOf(v))
		}
		return b.String()
	}
	c.P50, c.P99, c.Max = line(p50s), line(p99s), line(maxs)
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		c.YTicks = append(c.YTicks, tick{X: yOf(v), Label: trimFloat(v) + " ms"})
	}
	// Throughput, stacked ok/fail/info, in ops/s.
	bucketSecs := float64(end) / 1e9 / buckets
	maxRate := 0.0
	for b := range buckets {
		maxRate = math.Max(maxRate, float64(okN[b]+failN[b]+infoN[b])/bucketSecs)
	}
	maxRate = niceCeil(maxRate)
	for b := range buckets {
		y := c.ThroughputBase
		for _, part := range []struct {
			n    int
			fill string
			name string
		}{{okN[b], "#59a14f", "ok"}, {failN[b], "#bab0ac", "fail"}, {infoN[b], "#f28e2b", "info"}} {
			if part.n == 0 || maxRate == 0 {
				continue
			}
			h := float64(part.n) / bucketSecs / maxRate * chartH
			y -= h
			c.Bars = append(c.Bars, rect{X: plotLeft + float64(b)*bw, Y: y, W: bw, H: h, Fill: part.fill,
				Title: fmt.Sprintf("%s – %s: %d %s (%.0f/s)", secs(int64(float64(b)*bucketSecs*1e9)), secs(int64(float64(b+1)*bucketSecs*1e9)), part.n, part.name, float64(part.n)/bucketSecs)})
		}
	}
	for i := 0; i <= 4; i++ {
		v := maxRate * float64(i) / 4
		c.TTicks = append(c.TTicks, tick{X: c.ThroughputBase - float64(i)/4*chartH, Label: trimFloat(v) + "/s"})
	}
	c.Faults = faultRects(faults, end, c.LatencyTop, c.ThroughputBase-c.LatencyTop, false)
	for _, a := range added {
		if a.MS <= 0 {
			continue
		}
		x0, x1 := xOf(a.Start, end), xOf(a.End, end)
		c.Added = append(c.Added, rect{X: x0, Y: yOf(float64(a.MS)), W: math.Max(x1-x0, 1), Fill: a.Color, Title: a.Text})
	}
	c.Ticks = timeTicks(end, c.Height-8)
	return c
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= p*m {
			return p * m
		}
	}
	return 10 * p
}
