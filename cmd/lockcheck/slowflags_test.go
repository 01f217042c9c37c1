package main

import (
	"testing"
	"time"
)

func TestSlownessFlags(t *testing.T) {
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
		var lo, hi time.Duration
		err := durRange{&lo, &hi}.Set(tc.in)
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
		var lo, hi float64
		err := floatRange{&lo, &hi}.Set(tc.in)
		if (err != nil) != tc.bad || lo != tc.lo || hi != tc.hi {
			t.Errorf("%q: %v..%v, %v; want %v..%v (bad %v)", tc.in, lo, hi, err, tc.lo, tc.hi, tc.bad)
		}
	}
}
