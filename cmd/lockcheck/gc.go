package main

import (
	"os"
	"runtime/debug"
)

// tuneGC bounds the heap while a big history is checked: the checker
// streams, so its live data is small and the default GOGC (a collection when
// the heap doubles) costs little; a soft limit of 700 MiB keeps a report of a
// huge history (which holds its ops) from growing past it (unless GOGC or
// GOMEMLIMIT say otherwise). It returns a func that restores the settings.
func tuneGC() func() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := debug.SetMemoryLimit(700 << 20)
	pct := debug.SetGCPercent(100)
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
}
