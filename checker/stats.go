package checker

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"

	"github.com/lockcheck/lockcheck/history"
)

// Counts are completed operations by outcome. Pending counts invocations
// that never completed.
type Counts struct {
	OK      int `json:"ok"`
	Fail    int `json:"fail"`
	Info    int `json:"info"`
	Pending int `json:"pending,omitempty"`
}

func (c *Counts) add(t history.Type, pending bool) {
	switch {
	case pending:
		c.Pending++
	case t == history.OK:
		c.OK++
	case t == history.Fail:
		c.Fail++
	default:
		c.Info++
	}
}

// Total is the number of operations counted.
func (c Counts) Total() int { return c.OK + c.Fail + c.Info + c.Pending }

// Latency percentiles of completed operations, in milliseconds.
type Latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// Stats summarizes a history.
type Stats struct {
	Events     int                `json:"events"`
	Duration   float64            `json:"duration_s"` // time of the last line
	Processes  int                `json:"processes"`
	Locks      int                `json:"locks"`
	Nemesis    int                `json:"nemesis_events"`
	ByF        map[string]Counts  `json:"by_f"`
	ByProcess  map[int]Counts     `json:"by_process"`
	LatencyOK  map[string]Latency `json:"latency_ok"`  // ok completions, per f
	LatencyAll map[string]Latency `json:"latency_all"` // every completion, per f
}

// statsAcc gathers the statistics as calls complete.
type statsAcc struct {
	events, nemesis int
	byF             []*fStats // few: searched in order
	byProc          map[int]*Counts
}

// fStats are one f's counts and latencies.
type fStats struct {
	f       string
	counts  Counts
	ok, all latHist
}

func (s *statsAcc) forF(f string) *fStats {
	for _, x := range s.byF {
		if x.f == f {
			return x
		}
	}
	x := &fStats{f: f}
	s.byF = append(s.byF, x)
	return x
}

func (s *statsAcc) proc(p int) *Counts {
	c := s.byProc[p]
	if c == nil {
		c = &Counts{}
		s.byProc[p] = c
	}
	return c
}

// latHist counts latencies in logarithmic buckets, 1024 to each power of
// two (within 0.2%), with the exact maximum: its memory does not grow with
// the history, as a list of every latency would.
type latHist struct {
	n   int
	max int64
	b   [64]*[latSub]uint32
}

const latSub = 1024

func latBucket(d int64) (int, int) {
	if d < latSub {
		return 0, int(d)
	}
	e := bits.Len64(uint64(d)) - 10 // d >> e is in [512, 1024)
	return e, int(d >> e)
}

func (h *latHist) add(d int64) {
	d = max(d, 0)
	e, m := latBucket(d)
	if h.b[e] == nil {
		h.b[e] = new([latSub]uint32)
	}
	h.b[e][m]++
	h.n++
	h.max = max(h.max, d)
}

// at returns the q-quantile (the value of rank q*(n-1), rounded), as the
// middle of its bucket, in ms.
func (h *latHist) at(q float64) float64 {
	rank := int(q*float64(h.n-1) + 0.5)
	for e := range h.b {
		if h.b[e] == nil {
			continue
		}
		for m, c := range h.b[e] {
			if rank < int(c) {
				lo := int64(m) << e
				v := lo + (int64(1)<<e)/2
				if e == 0 {
					v = lo
				}
				return nsToMS(min(v, h.max))
			}
			rank -= int(c)
		}
	}
	return nsToMS(h.max)
}

func nsToMS(ns int64) float64 { return math.Round(float64(ns)/1e3) / 1e3 }

func newStatsAcc() statsAcc {
	return statsAcc{byProc: map[int]*Counts{}}
}

func (s *statsAcc) count(c *call, pending bool) {
	s.forF(c.f).counts.add(c.typ, pending)
	c.ps.counts.add(c.typ, pending)
}

func (s *statsAcc) complete(c *call) {
	x := s.forF(c.f)
	x.counts.add(c.typ, false)
	c.ps.counts.add(c.typ, false)
	d := c.ret - c.inv
	x.all.add(d)
	if c.typ == history.OK {
		x.ok.add(d)
	}
}

func (s *statsAcc) pendingCall(c *call) { s.count(c, true) }

// merge adds a shard's counts and latencies to s.
func (s *statsAcc) merge(o *statsAcc) {
	for _, x := range o.byF {
		y := s.forF(x.f)
		y.counts.OK += x.counts.OK
		y.counts.Fail += x.counts.Fail
		y.counts.Info += x.counts.Info
		y.counts.Pending += x.counts.Pending
		y.ok.merge(&x.ok)
		y.all.merge(&x.all)
	}
	for p, c := range o.byProc {
		if c.Total() == 0 {
			continue // a process that only passed through this shard
		}
		d := s.proc(p)
		d.OK += c.OK
		d.Fail += c.Fail
		d.Info += c.Info
		d.Pending += c.Pending
	}
}

func (h *latHist) merge(o *latHist) {
	h.n += o.n
	h.max = max(h.max, o.max)
	for e, b := range o.b {
		if b == nil {
			continue
		}
		if h.b[e] == nil {
			h.b[e] = new([latSub]uint32)
		}
		for m, c := range b {
			h.b[e][m] += c
		}
	}
}

func (s *statsAcc) stats(end int64, locks int) Stats {
	st := Stats{
		Events: s.events, Duration: float64(end) / 1e9, Nemesis: s.nemesis,
		ByF: map[string]Counts{}, ByProcess: map[int]Counts{}, Processes: len(s.byProc), Locks: locks,
		LatencyOK: map[string]Latency{}, LatencyAll: map[string]Latency{},
	}
	for _, x := range s.byF {
		st.ByF[x.f] = x.counts
		if x.ok.n > 0 {
			st.LatencyOK[x.f] = percentiles(&x.ok)
		}
		if x.all.n > 0 {
			st.LatencyAll[x.f] = percentiles(&x.all)
		}
	}
	for p, c := range s.byProc {
		st.ByProcess[p] = *c
	}
	return st
}

func percentiles(h *latHist) Latency {
	return Latency{Count: h.n, P50: h.at(0.5), P90: h.at(0.9), P99: h.at(0.99), Max: nsToMS(h.max)}
}

func (s Stats) summary() string {
	fs := make([]string, 0, len(s.ByF))
	for f := range s.ByF {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	var b strings.Builder
	fmt.Fprintf(&b, "%d events over %.1fs, %d processes, %d locks", s.Events, s.Duration, s.Processes, s.Locks)
	for _, f := range fs {
		c := s.ByF[f]
		fmt.Fprintf(&b, "; %s %d ok/%d fail/%d info", f, c.OK, c.Fail, c.Info)
		if c.Pending > 0 {
			fmt.Fprintf(&b, "/%d pending", c.Pending)
		}
	}
	return b.String()
}
