// Package history defines the operations of a run and the streamed JSONL
// history format of ../shared/design/history.md. It imports no other package
// of the project.
package history

import "encoding/json"

// Type is the kind of a history line.
type Type string

const (
	Invoke Type = "invoke"
	OK     Type = "ok"
	Fail   Type = "fail" // the operation certainly did not take effect
	Info   Type = "info" // the outcome is unknown: it may take effect later, or never
)

// NemesisProcess is the process number of fault events.
const NemesisProcess = -1

// Operation names (f) used by lockcheck's workload. Other producers of
// histories may use their own names for anything but the lock and resource
// operations, which the checkers interpret.
const (
	FAcquire = "acquire" // lock: invoke value none; ok value: the fencing token, if any
	FRenew   = "renew"   // lock: extends the hold; ok carries lease_ms
	FRelease = "release" // lock
	// FAdd is one critical section: read the lock-protected set of the lock,
	// add the element given as the invoke's value, write the set back. An ok
	// add is acknowledged; a fail add was refused (e.g. a stale fencing token).
	FAdd = "add"
	// FRead reads the lock-protected set of the lock; its ok value is the
	// array of elements. The last ok read of a lock is the final read.
	FRead = "read"
	// FMeta is a nemesis-process line (type info) carrying the run's
	// configuration as its value, including the recipe's promise.
	FMeta = "meta"
)

// Op is one line of a history.
type Op struct {
	Index   int64           `json:"index"`
	Time    int64           `json:"time"` // ns since the run started, monotonic
	Process int             `json:"process"`
	Type    Type            `json:"type"`
	F       string          `json:"f"`
	Lock    string          `json:"lock,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
	LeaseMS int64           `json:"lease_ms,omitempty"`
	Node    string          `json:"node,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// Promise is what a recipe claims, recorded in the meta line so that check and
// report judge a stored run the same way.
type Promise string

const (
	// PromiseMutex: no two holds of a lock overlap, the lock object is a
	// linearizable mutex, and the protected resource loses nothing.
	PromiseMutex Promise = "mutex"
	// PromiseFenced: the protected resource never accepts an acknowledged
	// write from a stale holder and loses nothing. Overlapping holds are
	// findings, not failures.
	PromiseFenced Promise = "fenced"
)

// Meta is the value of the FMeta line.
type Meta struct {
	Test    string            `json:"test,omitempty"`
	Lock    string            `json:"lock,omitempty"` // recipe name
	Promise Promise           `json:"promise,omitempty"`
	Nemesis []string          `json:"nemesis,omitempty"`
	Seed    int64             `json:"seed,omitempty"`
	Config  map[string]string `json:"config,omitempty"`
	// Faults is how reports draw each fault kind the run may inject.
	Faults map[string]FaultStyle `json:"faults,omitempty"`
}
