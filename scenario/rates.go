package scenario

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
)

// Rate is one measured catch rate: a row run Runs times at the settings it
// had then (Time, Interval), on a machine of Cores cores at load Load. A
// line of rates.jsonl; `lockcheck matrix --record FILE` appends them.
type Rate struct {
	Row      string   `json:"row"`
	Time     Duration `json:"time"`
	Interval Duration `json:"interval"`
	Runs     int      `json:"runs"`
	Invalid  int      `json:"invalid"`
	Unknown  int      `json:"unknown,omitempty"`
	// NoFault counts the runs, among Runs, in which a fault kind the row
	// asks for was never dealt (Tally.NoFault): they show nothing of the
	// row, whatever their verdict.
	NoFault int    `json:"no_fault,omitempty"`
	Date    string `json:"date"` // YYYY-MM-DD, UTC
	Cores   int    `json:"cores"`
	// Load is the machine's load average over the runs ("10-30", "idle");
	// "" when it was not recorded.
	Load string `json:"load,omitempty"`
	// IdleBelow is the 1-minute load average every run started under,
	// where `matrix --idle-below` waited for an idle machine before each
	// run (0: not waited for, a run that started above it, or a pooled
	// batch that did not wait). A run's own cluster and clients raise the
	// load it ran at (Load): this says the machine had nothing else to do.
	IdleBelow float64 `json:"idle_below,omitempty"`
	// FirstAnomaly is the median, over the invalid runs, of the time from
	// the start of the clients and faults to the first anomaly; absent
	// when not measured.
	FirstAnomaly Duration `json:"first_anomaly,omitempty"`
	// Anomalies is the range of anomalies the checker reported per run
	// ("0-12"), and Kinds their kinds over the runs; empty when not
	// recorded.
	Anomalies string   `json:"anomalies,omitempty"`
	Kinds     []string `json:"kinds,omitempty"`
	// First is the number of the batch's first run (`matrix --first`): the
	// runs had the row's seed plus First, First+1, ... (0 when absent).
	First int `json:"first,omitempty"`
	// Availability is the range of the runs' mean availability over their
	// locks, in whole percents ("41-100"), and Stuck the runs that left a
	// lock held to the end (checker.Liveness); absent when not recorded.
	Availability string `json:"availability,omitempty"`
	Stuck        int    `json:"stuck,omitempty"`
	// Def is the fingerprint of the row's definition the runs had
	// (Row.Fingerprint); absent in lines recorded before it was kept.
	Def string `json:"def,omitempty"`
	// Shard is the share of a fan-out that measured the line (`matrix
	// --shard K/N`): only in a shard's own file, which `matrix merge`
	// checks and pools into lines without it.
	Shard string `json:"shard,omitempty"`
}

// Duration is a time.Duration written as Go spells it ("20s").
type Duration time.Duration

// MarshalText writes the duration as "20s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads "20s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// At says whether r was measured at the row's settings: its duration, and
// its fault interval when it has faults (a row without faults ignores it).
func (r Rate) At(row Row) bool {
	if time.Duration(r.Time) != row.Time {
		return false
	}
	return len(row.Faults) == 0 || time.Duration(r.Interval) == row.Interval
}

// Measured is the rate a row's docs show: the latest line measured at the
// row's settings, with the earlier lines at those settings that ran other
// seeds (batches of `matrix --first`) added in (Pooled). Date, cores and
// the first anomaly are the latest line's; loads and anomaly ranges span
// the batches; kinds are their union; Batches says how many lines were
// pooled.
func Measured(row Row, rates []Rate) (rt Rate, batches int, ok bool) {
	lines := Pooled(row, rates)
	for i, b := range lines {
		if i == 0 {
			rt, ok = b, true
			rt.Kinds = slices.Clone(b.Kinds)
			continue
		}
		rt.Runs += b.Runs
		rt.Invalid += b.Invalid
		rt.Unknown += b.Unknown
		rt.NoFault += b.NoFault
		rt.First = min(rt.First, b.First)
		rt.Load = spanRanges(rt.Load, b.Load)
		rt.IdleBelow = pooledIdleBelow(rt.IdleBelow, b.IdleBelow)
		rt.Anomalies = spanRanges(rt.Anomalies, b.Anomalies)
		rt.Availability = spanRanges(rt.Availability, b.Availability)
		rt.Stuck += b.Stuck
		for _, k := range b.Kinds {
			if !slices.Contains(rt.Kinds, k) {
				rt.Kinds = append(rt.Kinds, k)
			}
		}
		slices.Sort(rt.Kinds)
	}
	return rt, len(lines), ok
}

// Pooled is the lines of rates that Measured adds up for row, latest
// first: the latest line at the row's settings and the earlier ones there
// that ran other seeds. An earlier line whose runs overlap one already
// counted measured the same seeds again, before: it and everything older
// are superseded, except a line whose runs all left a fault kind undealt,
// which the later line ran again (it alone is dropped).
func Pooled(row Row, rates []Rate) []Rate {
	var out []Rate
	var taken [][2]int // [first, first+runs) of every pooled line
	for i := len(rates) - 1; i >= 0; i-- {
		b := rates[i]
		if b.Row != row.Name || !b.At(row) {
			continue
		}
		span := [2]int{b.First, b.First + b.Runs}
		if slices.ContainsFunc(taken, func(t [2]int) bool { return span[0] < t[1] && t[0] < span[1] }) {
			if b.rerunOnly() {
				continue
			}
			break
		}
		taken = append(taken, span)
		out = append(out, b)
	}
	return out
}

// rerunOnly says a line is a batch whose every run left a fault kind
// undealt and found nothing: running those seeds again completes the batch,
// it does not re-measure the row, so the later line replaces this one alone.
func (r Rate) rerunOnly() bool {
	return r.Runs > 0 && r.NoFault == r.Runs && r.Invalid == 0 && r.Unknown == 0
}

// spanRanges is the range covering two ranges written "a-b" or "a"; where
// one is not such a range ("idle", unrecorded), the other, or a when both
// are words.
func spanRanges(a, b string) string {
	lo1, hi1, ok1 := parseRange(a)
	lo2, hi2, ok2 := parseRange(b)
	switch {
	case ok1 && ok2:
		lo, hi := min(lo1, lo2), max(hi1, hi2)
		if lo == hi {
			return strconv.Itoa(lo)
		}
		return fmt.Sprintf("%d-%d", lo, hi)
	case ok2:
		return b
	}
	return a
}

// pooledIdleBelow is two batches' IdleBelow: the higher bound, or 0 when
// either batch did not wait for an idle machine (the pool then cannot say
// its every run started on one).
func pooledIdleBelow(a, b float64) float64 {
	if a == 0 || b == 0 {
		return 0
	}
	return max(a, b)
}

func parseRange(s string) (lo, hi int, ok bool) {
	l, h, found := strings.Cut(s, "-")
	if !found {
		h = l
	}
	lo, err1 := strconv.Atoi(l)
	hi, err2 := strconv.Atoi(h)
	return lo, hi, err1 == nil && err2 == nil && lo <= hi
}

//go:embed rates.jsonl
var ratesFile []byte

// Rates are the measured catch rates of the repository (rates.jsonl).
func Rates() ([]Rate, error) { return ReadRates(bytes.NewReader(ratesFile)) }

// ReadRates reads JSON lines of Rate; a line that is not one is an error
// naming it.
func ReadRates(r io.Reader) ([]Rate, error) {
	var out []Rate
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var rt Rate
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rt); err != nil {
			return nil, fmt.Errorf("rates line %d: %w", n, err)
		}
		out = append(out, rt)
	}
	return out, sc.Err()
}

// CheckRates tells which rates do not fit the rows: a row that does not
// exist (renamed rows keep their rates only if the rates are moved too),
// counts that do not add up, a date that is not one.
func CheckRates(rows []Row, rates []Rate) error {
	names := map[string]bool{}
	for _, r := range rows {
		names[r.Name] = true
	}
	var errs []error
	for i, rt := range rates {
		if !names[rt.Row] {
			errs = append(errs, fmt.Errorf("rate %d: no row %q", i+1, rt.Row))
		}
		if rt.Runs < 1 || rt.Invalid < 0 || rt.Unknown < 0 || rt.Invalid+rt.Unknown > rt.Runs {
			errs = append(errs, fmt.Errorf("rate %d (%s): %d invalid and %d unknown of %d runs", i+1, rt.Row, rt.Invalid, rt.Unknown, rt.Runs))
		}
		if rt.NoFault < 0 || rt.NoFault > rt.Runs {
			errs = append(errs, fmt.Errorf("rate %d (%s): %d runs without a fault kind of %d runs", i+1, rt.Row, rt.NoFault, rt.Runs))
		}
		if _, err := time.Parse(time.DateOnly, rt.Date); err != nil {
			errs = append(errs, fmt.Errorf("rate %d (%s): date %q: want YYYY-MM-DD", i+1, rt.Row, rt.Date))
		}
		if rt.Time <= 0 || rt.Interval <= 0 || rt.Cores < 1 {
			errs = append(errs, fmt.Errorf("rate %d (%s): time, interval and cores must be positive", i+1, rt.Row))
		}
	}
	return errors.Join(errs...)
}

// Tally counts a row's runs by verdict.
type Tally struct {
	Runs, Invalid, Valid, Unknown int
	// NoFault counts runs in which a fault kind the row asks for was never
	// injected: such a run shows nothing about the row, whatever its
	// verdict.
	NoFault int
	// Anomalies are the anomaly counts of the runs Saw was told of, and
	// Kinds the kinds among them.
	Anomalies []int
	Kinds     map[string]bool
	// LiveMissed counts the runs that missed the row's liveness assertion;
	// Avail are the runs' availabilities and Stuck the runs that left a
	// lock held to the end (Live).
	LiveMissed int
	Avail      []float64
	Stuck      int
}

// Saw records one run's anomalies (their count and kinds).
func (t *Tally) Saw(anomalies []checker.Anomaly) {
	t.Anomalies = append(t.Anomalies, len(anomalies))
	for _, a := range anomalies {
		if t.Kinds == nil {
			t.Kinds = map[string]bool{}
		}
		t.Kinds[a.Kind] = true
	}
}

// AnomalyRange is "min-max" of the anomaly counts seen ("" when none were
// recorded) and the kinds, sorted.
func (t Tally) AnomalyRange() (string, []string) {
	if len(t.Anomalies) == 0 {
		return "", nil
	}
	kinds := slices.Sorted(maps.Keys(t.Kinds))
	lo, hi := slices.Min(t.Anomalies), slices.Max(t.Anomalies)
	if lo == hi {
		return strconv.Itoa(lo), kinds
	}
	return fmt.Sprintf("%d-%d", lo, hi), kinds
}

// Add counts one run's verdict, the fault windows it started (by kind) and
// the steps of its schedule it never dealt, and returns the row's kinds
// that were not injected. A run that left a step of its row's schedule
// undealt counts among those without every fault, as one missing a kind
// does: a row whose schedule kills twice shows nothing of the second kill
// in a run that dealt only the first.
func (t *Tally) Add(row Row, v checker.Verdict, faults map[string]int, undealt int) (missing []string) {
	t.Runs++
	switch v {
	case checker.Invalid:
		t.Invalid++
	case checker.Valid:
		t.Valid++
	default: // unknown, or no verdict: the run failed
		t.Unknown++
	}
	for _, k := range row.Faults {
		if faults[k] == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 || undealt > 0 {
		t.NoFault++
	}
	return missing
}

// Met says whether the runs meet the row's expectation: a known-unsafe row
// caught in at least its bar of 10 runs (a single run: invalid), a safe row valid
// in every run; and every run injected the row's faults.
func (t Tally) Met(row Row) bool {
	if t.Runs == 0 || t.NoFault > 0 || t.LiveMissed > 0 {
		return false
	}
	if row.Unsafe {
		return row.Caught(t.Invalid, t.Runs)
	}
	if row.Load != nil && t.Invalid > 0 && t.Valid+t.Invalid == t.Runs {
		// Invalid runs are the load's only when every run's anomalies
		// were seen and are of the bound's kinds.
		return len(t.Anomalies) == t.Runs && row.LoadAllows(slices.Collect(maps.Keys(t.Kinds)))
	}
	return t.Valid == t.Runs
}
