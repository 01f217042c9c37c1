// Package faultkind holds what the reports know of a fault kind without its
// injector: the sentence that explains the kind's windows as the likely
// cause of an anomaly. A kind declares it in its own file of package
// nemesis (nemesis.Kind.Cause), beside its values and its injector; the
// nemesis's table registers it here, and the reports read it from here, so
// that neither imports the other and a kind is owned in one place.
//
// It imports only history (a window is a history.FaultWindow): the anomaly
// kinds a cause explains are the checker's names, repeated here
// (reports' tests hold them equal).
package faultkind

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// The anomaly kinds a cause may explain: checker.KindOverlap, ... (this
// leaf cannot import the checker, which sits downstream of the nemesis).
const (
	Overlap         = "overlapping-holds"
	NonLinearizable = "non-linearizable"
	LostAdd         = "lost-add"
	Duplicate       = "duplicate-element"
	StaleWrite      = "stale-holder-write"
	TokenOrder      = "token-not-increasing"
	StuckLock       = "stuck-lock"
)

// Anomalies are every anomaly kind named above.
var Anomalies = []string{Overlap, NonLinearizable, LostAdd, Duplicate, StaleWrite, TokenOrder, StuckLock}

// TwoGrants are what a second grant of a held lock shows as (a lost Paxos
// state, a cut that lets both sides grant).
var TwoGrants = []string{Overlap, NonLinearizable, Duplicate, TokenOrder}

// Anomaly is what a cause is asked to explain: a checker.Anomaly's kind and
// the processes it involves (none: any).
type Anomaly struct {
	Kind      string
	Processes []int
	// Start and End are the anomaly's span (ns since the run started;
	// End is math.MaxInt64 for one that never ends): a cause that acts
	// from a moment of its window on (a restore, at its stop) reads them.
	Start, End int64
}

// Cause explains anomalies by the windows of one fault kind.
type Cause struct {
	// Anomalies are the anomaly kinds it may explain.
	Anomalies []string
	// Lasting causes explain anomalies after their window too: what a
	// power loss threw away stays lost after the node is back.
	Lasting bool
	// Explain is the sentence for anomaly a and window w of the kind (its
	// start line's value in w.Value), or false when the window does not
	// bear on a or its value cannot be read.
	Explain func(w history.FaultWindow, a Anomaly) (string, bool)
}

// Registered is a kind's cause as registered.
type Registered struct {
	Kind string
	Cause
}

var (
	mu       sync.Mutex
	registry []Registered
)

// Register records kind's cause; the nemesis's table registers every
// kind's as the package is initialised, in table order (the order the
// reports list causes in). A kind registered twice, or a cause without
// Explain or anomalies, is a programming error: it panics.
func Register(kind string, c Cause) {
	mu.Lock()
	defer mu.Unlock()
	if c.Explain == nil || len(c.Anomalies) == 0 {
		panic("faultkind: " + kind + ": a cause needs Explain and its anomalies")
	}
	if slices.ContainsFunc(registry, func(r Registered) bool { return r.Kind == kind }) {
		panic("faultkind: " + kind + " registered twice")
	}
	registry = append(registry, Registered{kind, c})
}

// Causes are the registered causes, in registration order (a copy). A
// program that never links package nemesis has none: the reports then name
// no fault kind's mechanism, only the timeline's.
func Causes() []Registered {
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(registry)
}

// Decode reads a fault line's value into its type; ok is false when it
// does not decode or lacks one of the fields required (a field whose zero
// value means something: client 0, process 0).
func Decode[T any](raw json.RawMessage, required ...string) (T, bool) {
	var v T
	if json.Unmarshal(raw, &v) != nil {
		return v, false
	}
	if len(required) > 0 {
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) != nil {
			return v, false
		}
		for _, f := range required {
			if _, ok := fields[f]; !ok {
				return v, false
			}
		}
	}
	return v, true
}

// Secs writes a time of the run (ns since its start) as the reports do:
// "3.250s".
func Secs(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }

// ClientList says "client 1" or "clients 1, 4".
func ClientList(cs []int) string {
	if len(cs) == 1 {
		return fmt.Sprintf("client %d", cs[0])
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprint(c)
	}
	if len(parts) == 0 {
		return "no client"
	}
	return "clients " + strings.Join(parts, ", ")
}

// SecondsText writes a recorded Go duration such as "+4.512s" as "4.5 s".
func SecondsText(d string) string {
	v, ok := Offset(d)
	if !ok {
		return d
	}
	return fmt.Sprintf("%.1f s", v.Seconds())
}

// Offset reads a recorded clock offset, a Go duration with an optional
// sign ("+4.512s").
func Offset(d string) (time.Duration, bool) {
	v, err := time.ParseDuration(strings.TrimPrefix(d, "+"))
	return v, err == nil
}

// Percent is a share of a core as the causes say it: "5 %".
func Percent(share float64) string {
	return fmt.Sprintf("%.3g %%", share*100)
}
