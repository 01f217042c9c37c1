package scenario

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
)

// A row may assert liveness besides its verdict (Row.FreesWithin,
// Row.StaysStuck): what a user of a lock asks once its holder died. Stuck
// is never a verdict: a lock left held for good breaks no mutual
// exclusion, so the assertion is judged apart from it (Tally.Live).

// LiveAsserted says whether the row asserts liveness.
func (r Row) LiveAsserted() bool { return r.FreesWithin > 0 || r.StaysStuck }

// StuckBound is the stuck bound the row's runs are checked with: its
// FreesWithin, else the run's default (0).
func (r Row) StuckBound() time.Duration { return r.FreesWithin }

// Live judges one run's liveness against the row's assertion: nil when it
// holds (or the row asserts none), else what was seen, in a line.
func (r Row) Live(l *checker.Liveness) error {
	if !r.LiveAsserted() {
		return nil
	}
	if l == nil {
		return fmt.Errorf("no liveness: the run has no lock operations")
	}
	switch {
	case r.StaysStuck:
		if len(l.StuckAtEnd()) == 0 {
			return fmt.Errorf("asserted stays stuck, yet no lock was left held to the end (availability %.1f%%)", 100*l.Availability())
		}
	case r.FreesWithin > 0:
		if st := l.AllStuck(); len(st) > 0 {
			return fmt.Errorf("asserted frees within %v, yet %s", r.FreesWithin, st[0].Message)
		}
	}
	return nil
}

// liveWords is the row's liveness assertion in words ("" for none).
func (r Row) liveWords() string {
	switch {
	case r.StaysStuck:
		return "stays stuck"
	case r.FreesWithin > 0:
		return "frees within " + secs(r.FreesWithin)
	}
	return ""
}

// checkLive is what Check asks of a row's liveness fields.
func (r Row) checkLive(bad func(string, ...any)) {
	switch {
	case r.FreesWithin < 0:
		bad("frees-within %v is negative", r.FreesWithin)
	case r.FreesWithin > 0 && r.StaysStuck:
		bad("frees within %v and stays stuck: a row asserts one of them", r.FreesWithin)
	}
	if r.KillTarget != "" {
		if err := nemesis.CheckClientKill(0, r.KillTarget); err != nil {
			bad("kill-target: %v", err)
		}
	}
}

// Live counts one run's liveness: the row's assertion missed (LiveMissed),
// the run's mean availability, and whether a lock stayed stuck to the end.
func (t *Tally) Live(row Row, l *checker.Liveness) error {
	err := row.Live(l)
	if err != nil {
		t.LiveMissed++
	}
	if l != nil {
		t.Avail = append(t.Avail, l.Availability())
		if len(l.StuckAtEnd()) > 0 {
			t.Stuck++
		}
	}
	return err
}

// AvailabilityRange is the runs' availability in whole percents, "min-max"
// ("" when none was counted): floor of the lowest, ceiling of the highest.
func (t Tally) AvailabilityRange() string {
	if len(t.Avail) == 0 {
		return ""
	}
	lo, hi := t.Avail[0], t.Avail[0]
	for _, a := range t.Avail {
		lo, hi = min(lo, a), max(hi, a)
	}
	l, h := int(math.Floor(100*lo)), int(math.Ceil(100*hi))
	if l == h {
		return strconv.Itoa(l)
	}
	return fmt.Sprintf("%d-%d", l, h)
}

// availabilityCell is a measured rate's availability and stuck runs in a
// table cell.
func availabilityCell(rt Rate) string {
	if rt.Availability == "" {
		return "-"
	}
	s := rt.Availability + "%"
	if rt.Stuck > 0 {
		s += fmt.Sprintf(", stuck to the end in %d of %d runs", rt.Stuck, rt.Runs)
	}
	return s
}
