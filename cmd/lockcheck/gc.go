package main

import (
	"os"
	"runtime/debug"
)

// tuneGC bounds the heap while a big history is checked, with a soft limit
// (unless GOGC or GOMEMLIMIT say otherwise): the checker streams, and most
// of what it keeps (the protected sets) is memory the collector does not
// scan, so collecting before the heap doubles costs little; a report holds
// the history's ops and gets more room. Past the limit the runtime lets the
// heap grow rather than spend more than half the CPU collecting. It returns
// a func that restores the settings.
const (
	checkMemLimit  = 224 << 20 // docs/checkers.md: 10M events on 1,000 locks within 256 MiB
	reportMemLimit = 700 << 20
)

func tuneGC(soft int64) func() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := debug.SetMemoryLimit(soft)
	pct := debug.SetGCPercent(100)
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
}
