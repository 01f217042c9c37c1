package nemesis

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Slowness bounds the slowness kinds' draws (slow-node, coord-slow-node,
// gc-stall, client-gc-stall, slow-disk). A zero pair takes its default
// (DefaultSlowness).
type Slowness struct {
	// CPUMin and CPUMax bound slow-node's quota, a share of one core
	// (log-uniform): the node's processes together get that much CPU.
	CPUMin, CPUMax float64
	// StallMin and StallMax bound one stall of gc-stall and
	// client-gc-stall (log-uniform): GC pauses run from tens of
	// milliseconds to seconds.
	StallMin, StallMax time.Duration
	// StallEvery is the mean gap between two stalls of a window
	// (exponential), after the stall before it.
	StallEvery time.Duration
	// DiskMin and DiskMax bound slow-disk's latency on each write and
	// fsync (uniform).
	DiskMin, DiskMax time.Duration
}

// DefaultSlowness: a node at 2-10 % of a core answers an LWT in seconds
// (the overloaded coordinator, not a dead one); stalls of 20 ms to 2 s,
// a second apart; a disk 50-500 ms slow per sync, slower than any
// healthy disk and short of the lease.
var DefaultSlowness = Slowness{
	CPUMin: 0.02, CPUMax: 0.1,
	StallMin: 20 * time.Millisecond, StallMax: 2 * time.Second, StallEvery: time.Second,
	DiskMin: 50 * time.Millisecond, DiskMax: 500 * time.Millisecond,
}

// minCPU is the smallest share a node's quota gives: the kernel takes no
// quota under 1 ms of CPU, and cluster.Node lengthens its period to at most
// 1 s for shares under 1 % (1 ms per 100 ms).
const minCPU = 0.001

// WithDefaults fills the zero pairs with DefaultSlowness's.
func (s Slowness) WithDefaults() Slowness {
	d := DefaultSlowness
	if s.CPUMin == 0 && s.CPUMax == 0 {
		s.CPUMin, s.CPUMax = d.CPUMin, d.CPUMax
	}
	if s.StallMin == 0 && s.StallMax == 0 {
		s.StallMin, s.StallMax = d.StallMin, d.StallMax
	}
	if s.StallEvery == 0 {
		s.StallEvery = d.StallEvery
	}
	if s.DiskMin == 0 && s.DiskMax == 0 {
		s.DiskMin, s.DiskMax = d.DiskMin, d.DiskMax
	}
	return s
}

// Validate says, in one line each, which bounds make no sense: negative
// or inverted, a quota the kernel refuses or above one core, and, when
// kinds stall (gc-stall, client-gc-stall), stalls given as long as the
// fault windows (window: the run's interval, their mean). The default
// stalls are fitted to short windows instead (Fit).
func (s Slowness) Validate(kinds []string, window time.Duration) error {
	given := s.StallMin != 0 || s.StallMax != 0
	s = s.WithDefaults()
	if !given || !slices.ContainsFunc(kinds, func(k string) bool { return k == GCStall || k == CoordGCStall || k == ClientGCStall }) {
		window = 0
	}
	var errs []error
	if s.CPUMin < minCPU || s.CPUMax < s.CPUMin || s.CPUMax > 1 || math.IsNaN(s.CPUMin) || math.IsNaN(s.CPUMax) {
		errs = append(errs, fmt.Errorf("slow-node CPU share %g..%g: want %g <= min <= max <= 1 (of one core)", s.CPUMin, s.CPUMax, minCPU))
	}
	if s.StallMin < time.Millisecond || s.StallMax < s.StallMin {
		errs = append(errs, fmt.Errorf("stall %v..%v: want 1ms <= min <= max", s.StallMin, s.StallMax))
	} else if window > 0 && s.StallMax >= window {
		errs = append(errs, fmt.Errorf("stall max %v: want it shorter than the fault windows (the interval, %v)", s.StallMax, window))
	}
	if s.StallEvery <= 0 {
		errs = append(errs, fmt.Errorf("stall every %v: want a positive mean gap", s.StallEvery))
	}
	if s.DiskMin < time.Millisecond || s.DiskMax < s.DiskMin {
		errs = append(errs, fmt.Errorf("disk latency %v..%v: want 1ms <= min <= max", s.DiskMin, s.DiskMax))
	}
	return errors.Join(errs...)
}

// Fit is s with its defaults, the default stalls cut to half the fault
// windows (window: the interval) when those are short: a stall fits in
// the window it belongs to.
func (s Slowness) Fit(window time.Duration) Slowness {
	given := s.StallMin != 0 || s.StallMax != 0
	s = s.WithDefaults()
	if !given && window > 0 && s.StallMax >= window {
		s.StallMax = max(window/2, time.Millisecond)
		s.StallMin = min(s.StallMin, s.StallMax)
	}
	return s
}

// WithSlowness bounds the slowness kinds' draws (zero pairs: defaults).
func WithSlowness(s Slowness) Option {
	return func(n *Nemesis) { n.env.Slow = s }
}

// logUniformF draws in [lo, hi] evenly over orders of magnitude: a share
// of 2 % as likely as one of 8 %.
func logUniformF(r *rand.Rand, lo, hi float64) float64 {
	if hi <= lo {
		return lo
	}
	return math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo)))
}

// stallPlan draws a window's stalls: the wait before each and its length,
// until they fill hold (at least one, at once). Every draw is made before
// anything waits, so that a seed fixes them.
func stallPlan(r *rand.Rand, s Slowness, hold time.Duration) (gaps, stalls []time.Duration) {
	var used time.Duration
	for len(stalls) == 0 || used < hold {
		var gap time.Duration
		if len(stalls) > 0 {
			gap = time.Duration(r.ExpFloat64() * float64(s.StallEvery))
		}
		d := logUniform(r, s.StallMin, s.StallMax).Round(time.Millisecond) // a stall of 30 ms as likely as one of 300 ms
		if used+gap+d > hold && len(stalls) > 0 {
			break
		}
		gaps, stalls = append(gaps, gap), append(stalls, d)
		used += gap + d
	}
	return gaps, stalls
}

// Flags are the `lockcheck run` flags that give s's non-zero bounds (""
// when all take their defaults), each with a leading space: a row's
// command line and a run's meta.
func (s Slowness) Flags() string {
	var b strings.Builder
	if s.CPUMin != 0 || s.CPUMax != 0 {
		fmt.Fprintf(&b, " --slow-cpu %s", rangeText(strconv.FormatFloat(s.CPUMin, 'g', -1, 64), strconv.FormatFloat(s.CPUMax, 'g', -1, 64)))
	}
	if s.StallMin != 0 || s.StallMax != 0 {
		fmt.Fprintf(&b, " --stall %s", rangeText(s.StallMin.String(), s.StallMax.String()))
	}
	if s.StallEvery != 0 {
		fmt.Fprintf(&b, " --stall-every %s", s.StallEvery)
	}
	if s.DiskMin != 0 || s.DiskMax != 0 {
		fmt.Fprintf(&b, " --disk-latency %s", rangeText(s.DiskMin.String(), s.DiskMax.String()))
	}
	return b.String()
}

// rangeText is "lo..hi", or "lo" when they are one value.
func rangeText(lo, hi string) string {
	if lo == hi {
		return lo
	}
	return lo + ".." + hi
}

// ParseSlowness reads the slowness bounds as `lockcheck run` spells them
// (--slow-cpu, --stall, --stall-every, --disk-latency: "lo..hi" or one
// value; "" leaves the zero, the default); Validate judges the result.
func ParseSlowness(cpu, stall, every, disk string) (Slowness, error) {
	var s Slowness
	pos := func(v string) (time.Duration, error) {
		d, err := time.ParseDuration(v)
		if err == nil && d <= 0 {
			err = fmt.Errorf("%v is not positive", d)
		}
		return d, err
	}
	var errs []error
	if cpu != "" {
		lo, hi, err := parseRange(cpu, func(v string) (float64, error) {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil && !(f > 0) {
				err = fmt.Errorf("%v is not positive", f)
			}
			return f, err
		})
		s.CPUMin, s.CPUMax = lo, hi
		if err != nil {
			errs = append(errs, fmt.Errorf("--slow-cpu %q: %w", cpu, err))
		}
	}
	if stall != "" {
		lo, hi, err := parseRange(stall, pos)
		s.StallMin, s.StallMax = lo, hi
		if err != nil {
			errs = append(errs, fmt.Errorf("--stall %q: %w", stall, err))
		}
	}
	if every != "" {
		d, err := pos(strings.TrimSpace(every))
		s.StallEvery = d
		if err != nil {
			errs = append(errs, fmt.Errorf("--stall-every %q: %w", every, err))
		}
	}
	if disk != "" {
		lo, hi, err := parseRange(disk, pos)
		s.DiskMin, s.DiskMax = lo, hi
		if err != nil {
			errs = append(errs, fmt.Errorf("--disk-latency %q: %w", disk, err))
		}
	}
	return s, errors.Join(errs...)
}

// FlagValues are s as ParseSlowness reads it back ("" for a zero pair).
func (s Slowness) FlagValues() (cpu, stall, every, disk string) {
	if s.CPUMin != 0 || s.CPUMax != 0 {
		cpu = rangeText(strconv.FormatFloat(s.CPUMin, 'g', -1, 64), strconv.FormatFloat(s.CPUMax, 'g', -1, 64))
	}
	if s.StallMin != 0 || s.StallMax != 0 {
		stall = rangeText(s.StallMin.String(), s.StallMax.String())
	}
	if s.StallEvery != 0 {
		every = s.StallEvery.String()
	}
	if s.DiskMin != 0 || s.DiskMax != 0 {
		disk = rangeText(s.DiskMin.String(), s.DiskMax.String())
	}
	return cpu, stall, every, disk
}

// parseRange parses "lo..hi" (lo <= hi) or one value for both.
func parseRange[T int64 | float64 | time.Duration](s string, parse func(string) (T, error)) (T, T, error) {
	a, b, isRange := strings.Cut(strings.TrimSpace(s), "..")
	if !isRange {
		b = a
	}
	lo, err := parse(strings.TrimSpace(a))
	if err != nil {
		return 0, 0, err
	}
	hi, err := parse(strings.TrimSpace(b))
	if err != nil {
		return 0, 0, err
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("%q: the upper bound is below the lower", s)
	}
	return lo, hi, nil
}
