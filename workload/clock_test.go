package workload

import (
	"testing"
	"time"
)

func TestSkewClockOffset(t *testing.T) {
	tests := []time.Duration{0, -10 * time.Second, 3 * time.Minute}
	for _, off := range tests {
		var c SkewClock
		c.SetOffset(off)
		before := time.Now()
		got := c.Now().Sub(before)
		if got < off || got > off+time.Second {
			t.Errorf("offset %v: clock read %v from the machine's", off, got)
		}
	}
}
