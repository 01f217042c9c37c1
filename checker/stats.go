package checker

import (
	"fmt"
	"math"
	"slices"
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
	byF             map[string]Counts
	byProc          map[int]Counts
	okLat, allLat   map[string][]float32 // ms: half the memory of ns, ample precision
}

func newStatsAcc() statsAcc {
	return statsAcc{byF: map[string]Counts{}, byProc: map[int]Counts{},
		okLat: map[string][]float32{}, allLat: map[string][]float32{}}
}

func (s *statsAcc) count(c *call, pending bool) {
	bf := s.byF[c.f]
	bf.add(c.typ, pending)
	s.byF[c.f] = bf
	bp := s.byProc[c.proc]
	bp.add(c.typ, pending)
	s.byProc[c.proc] = bp
}

func (s *statsAcc) complete(c *call) {
	s.count(c, false)
	d := float32(float64(c.ret-c.inv) / 1e6)
	s.allLat[c.f] = append(s.allLat[c.f], d)
	if c.typ == history.OK {
		s.okLat[c.f] = append(s.okLat[c.f], d)
	}
}

func (s *statsAcc) pendingCall(c *call) { s.count(c, true) }

func (s *statsAcc) stats(end int64, locks int) Stats {
	st := Stats{
		Events: s.events, Duration: float64(end) / 1e9, Nemesis: s.nemesis,
		ByF: s.byF, ByProcess: s.byProc, Processes: len(s.byProc), Locks: locks,
		LatencyOK: map[string]Latency{}, LatencyAll: map[string]Latency{},
	}
	for f, l := range s.okLat {
		st.LatencyOK[f] = percentiles(l)
	}
	for f, l := range s.allLat {
		st.LatencyAll[f] = percentiles(l)
	}
	return st
}

func percentiles(d []float32) Latency {
	slices.Sort(d)
	// float32 keeps 7 digits: round off the conversion's noise.
	ms := func(v float32) float64 { return math.Round(float64(v)*1e6) / 1e6 }
	at := func(q float64) float64 { return ms(d[int(q*float64(len(d)-1)+0.5)]) }
	return Latency{Count: len(d), P50: at(0.5), P90: at(0.9), P99: at(0.99), Max: ms(d[len(d)-1])}
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
