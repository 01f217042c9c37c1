package main

import (
	"os"
	"runtime/debug"
)

// tuneGC trades memory for speed while a big history is checked: the heap
// may grow to 4x the live data before a collection, but never past 900 MiB
// (unless GOGC or GOMEMLIMIT say otherwise). It returns a func that
// restores the settings.
func tuneGC() func() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := debug.SetMemoryLimit(900 << 20)
	pct := debug.SetGCPercent(300)
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
}
