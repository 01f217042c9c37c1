package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The slowness kinds' bounds are ranges on the command line ("20ms..2s",
// or one value for both ends), as --net-delay's are.

// durRange is a flag of two durations, "lo..hi" or "d".
type durRange struct{ lo, hi *time.Duration }

func (r durRange) String() string {
	if r.lo == nil || *r.lo == 0 && *r.hi == 0 {
		return ""
	}
	return rangeString(r.lo.String(), r.hi.String())
}

func (r durRange) Set(s string) error {
	lo, hi, err := parseRange(s, func(v string) (time.Duration, error) {
		d, err := time.ParseDuration(v)
		if err == nil && d <= 0 {
			err = fmt.Errorf("%v is not positive", d)
		}
		return d, err
	})
	if err != nil {
		return err
	}
	*r.lo, *r.hi = lo, hi
	return nil
}

// floatRange is a flag of two numbers, "lo..hi" or "x".
type floatRange struct{ lo, hi *float64 }

func (r floatRange) String() string {
	if r.lo == nil || *r.lo == 0 && *r.hi == 0 {
		return ""
	}
	return rangeString(strconv.FormatFloat(*r.lo, 'g', -1, 64), strconv.FormatFloat(*r.hi, 'g', -1, 64))
}

func (r floatRange) Set(s string) error {
	lo, hi, err := parseRange(s, func(v string) (float64, error) {
		f, err := strconv.ParseFloat(v, 64)
		if err == nil && !(f > 0) {
			err = fmt.Errorf("%v is not positive", f)
		}
		return f, err
	})
	if err != nil {
		return err
	}
	*r.lo, *r.hi = lo, hi
	return nil
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

func rangeString(lo, hi string) string {
	if lo == hi {
		return lo
	}
	return lo + ".." + hi
}
