package scenario

import (
	"slices"

	"github.com/lockcheck/lockcheck/workload"
)

// Rows are every asserted row, in the order the tests run them and
// docs/findings.md lists them: the exploratory rows the axes and the
// expectation table generate (axes.go, expect.go), the named regression
// rows (regressions.go), and the rows written by hand after them (Added,
// regressions.go). A new combination of existing axes is
// a line of the expectation table; a new Java lock an entry of JavaLocks;
// a new release line an entry of Releases; then `go test ./scenario
// -update` renders docs/findings.md and docs/locks.md and the rows'
// snapshot (testdata/rows.json).
var Rows = slices.Concat(
	rowsOf(recipeExpect),
	rowsOf(musicSeqMovements()),
	Regressions,
	rowsOf(catalogueExpect),
	javaRows(),
	releaseRows(),
	Added,
	slownessRows,
	slownessCatalogueRows,
	toolRows,
	restoreRows,
	upgradeRows,
	ticketRows,
)

// javaRows are the Java locks' rows: each lock's expectations, then the
// quick row of each lock (its known flaw under javaLockStall).
func javaRows() []Row {
	var rows, quick []Row
	for _, j := range JavaLocks {
		for _, e := range j.Expect {
			e.Lock = j.Name
			rows = append(rows, e.Row())
		}
		quick = append(quick, j.stallRow())
	}
	return append(rows, quick...)
}

// releaseRows are the rows on release lines other than the shared
// cluster's: the register family (the shared cluster's register rows and
// each line's), the locks on each line, and each line's quick row, each
// family in seed order.
func releaseRows() []Row {
	register, locks, quick := rowsOf(registerExpect), []Row(nil), []Row(nil)
	for _, rl := range Releases {
		for _, e := range rl.Expect {
			e.Cluster.Version = rl.Line
			if e.Lock == workload.ShapeRegister {
				register = append(register, e.Row())
			} else {
				locks = append(locks, e.Row())
			}
		}
		if rl.QuickSeed != 0 {
			quick = append(quick, rl.quickRow())
		}
	}
	return slices.Concat(bySeed(register), bySeed(locks), bySeed(quick))
}
