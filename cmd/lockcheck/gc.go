package main

import (
	"os"
	"runtime/debug"
)

// tuneGC trades memory for speed while a big history is checked: the heap
// may grow to 3x the live data before a collection, but not past 700 MiB
// (unless GOGC or GOMEMLIMIT say otherwise). It returns a func that
// restores the settings.
func tuneGC() func() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := debug.SetMemoryLimit(700 << 20)
	pct := debug.SetGCPercent(200)
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
}
