package workload

import (
	"sync/atomic"
	"time"
)

// SkewClock is a client clock with an adjustable offset from the machine's
// clock. The machine's clock itself is never changed: only what this client
// reads moves.
type SkewClock struct {
	offset atomic.Int64 // nanoseconds
}

// Now returns the machine's time plus the offset.
func (c *SkewClock) Now() time.Time { return time.Now().Add(c.Offset()) }

// SetOffset moves the clock by d from the machine's time.
func (c *SkewClock) SetOffset(d time.Duration) { c.offset.Store(int64(d)) }

// Offset is the current offset.
func (c *SkewClock) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// SystemClock is the machine's clock, the default of every recipe.
type SystemClock struct{}

// Now returns the machine's time.
func (SystemClock) Now() time.Time { return time.Now() }
