package nemesis

import (
	"testing"
	"time"
)

func TestParseSlowness(t *testing.T) {
	for _, tc := range []struct {
		in     string
		lo, hi time.Duration
		bad    bool
	}{
		{"20ms..2s", 20 * time.Millisecond, 2 * time.Second, false},
		{"300ms", 300 * time.Millisecond, 300 * time.Millisecond, false},
		{" 1s .. 3s ", time.Second, 3 * time.Second, false},
		{"2s..1s", 0, 0, true},
		{"-5ms", 0, 0, true},
		{"0", 0, 0, true},
		{"fast", 0, 0, true},
		{"1s..", 0, 0, true},
	} {
		s, err := ParseSlowness("", tc.in, "", "")
		lo, hi := s.StallMin, s.StallMax
		if err != nil {
			lo, hi = 0, 0
		}
		if (err != nil) != tc.bad || lo != tc.lo || hi != tc.hi {
			t.Errorf("%q: %v..%v, %v; want %v..%v (bad %v)", tc.in, lo, hi, err, tc.lo, tc.hi, tc.bad)
		}
	}
	for _, tc := range []struct {
		in     string
		lo, hi float64
		bad    bool
	}{
		{"0.02..0.1", 0.02, 0.1, false},
		{"0.05", 0.05, 0.05, false},
		{"0", 0, 0, true},
		{"-0.1..0.2", 0, 0, true},
		{"0.5..0.1", 0, 0, true},
		{"NaN", 0, 0, true},
	} {
		s, err := ParseSlowness(tc.in, "", "", "")
		lo, hi := s.CPUMin, s.CPUMax
		if err != nil {
			lo, hi = 0, 0
		}
		if (err != nil) != tc.bad || lo != tc.lo || hi != tc.hi {
			t.Errorf("%q: %v..%v, %v; want %v..%v (bad %v)", tc.in, lo, hi, err, tc.lo, tc.hi, tc.bad)
		}
	}
}

func TestSlownessFlagValuesRoundTrip(t *testing.T) {
	for _, s := range []Slowness{{}, DefaultSlowness, {CPUMin: 0.05, CPUMax: 0.05, StallEvery: 300 * time.Millisecond},
		{StallMin: 40 * time.Millisecond, StallMax: 40 * time.Millisecond, DiskMin: time.Millisecond, DiskMax: 2 * time.Second}} {
		got, err := ParseSlowness(s.FlagValues())
		if err != nil || got != s {
			t.Errorf("ParseSlowness(%v.FlagValues()) = %v, %v", s, got, err)
		}
	}
}
