package scenario

import (
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
)

// A row's liveness assertion is judged from the run's liveness: frees
// within a bound (no stuck period at it), stays stuck (one to the end);
// a miss fails the row's tally whatever the verdict.
func TestRowLive(t *testing.T) {
	freed := checker.StuckPeriod{Lock: "l0", Start: 1e9, End: 20e9, Freed: true, Message: "freed late"}
	held := checker.StuckPeriod{Lock: "l0", Start: 1e9, End: 30e9, Message: "held to the end"}
	live := func(ps ...checker.StuckPeriod) *checker.Liveness {
		return &checker.Liveness{Locks: []checker.LockLiveness{{Lock: "l0", Availability: 0.5, Stuck: ps}}}
	}
	frees := Row{Name: "x/client-kill", FreesWithin: 10 * time.Second}
	stuck := Row{Name: "x/client-kill", StaysStuck: true}
	for _, tt := range []struct {
		name string
		row  Row
		l    *checker.Liveness
		want string // "" met
	}{
		{"no assertion", Row{}, live(held), ""},
		{"frees: nothing stuck", frees, live(), ""},
		{"frees: freed too late", frees, live(freed), "asserted frees within 10s, yet freed late"},
		{"frees: held to the end", frees, live(held), "yet held to the end"},
		{"stuck: held to the end", stuck, live(freed, held), ""},
		{"stuck: freed", stuck, live(freed), "asserted stays stuck, yet no lock was left held to the end (availability 50.0%)"},
		{"no liveness", stuck, nil, "no lock operations"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var tally Tally
			tally.Add(Row{}, checker.Valid, nil, 0)
			err := tally.Live(tt.row, tt.l)
			if tt.want == "" {
				if err != nil || !tally.Met(Row{Want: checker.Valid}) {
					t.Fatalf("%v (met %v), want met", err, tally.Met(Row{Want: checker.Valid}))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%v, want %q", err, tt.want)
			}
			if tally.Met(Row{Want: checker.Valid}) {
				t.Error("a missed liveness assertion met the row")
			}
		})
	}
	var tally Tally
	tally.Live(Row{}, live(held))
	tally.Live(Row{}, &checker.Liveness{Locks: []checker.LockLiveness{{Lock: "l0", Availability: 0.987}}})
	if got := tally.AvailabilityRange(); got != "50-99" || tally.Stuck != 1 {
		t.Errorf("availability %q, stuck %d; want 50-99, 1", got, tally.Stuck)
	}
}

func TestRowLiveChecked(t *testing.T) {
	for _, r := range []Row{
		{FreesWithin: -time.Second},
		{FreesWithin: time.Second, StaysStuck: true},
		{KillTarget: "sometimes"},
	} {
		var errs []string
		r.checkLive(func(f string, a ...any) { errs = append(errs, f) })
		if len(errs) != 1 {
			t.Errorf("%+v: %d complaints, want 1", r, len(errs))
		}
	}
}
