// Package history defines the operations of a run and the streamed JSONL
// history format documented in docs/history.md (the contract users check
// their own histories against). It imports no other package of the project.
package history

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

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
	// FPhases is a nemesis-process line (type info) written when the run
	// ends: how long each phase took against what was asked; see RunPhases.
	FPhases = "phases"
)

// Register operations (the register workload: a linearizability check of
// Cassandra's LWT itself). Each names its register by Key; values are
// JSON objects of RegValue's fields, values of the register any JSON but
// null (null is "no row").
const (
	// FRegRead reads the register at SERIAL: ok value {"seen": V}, V null
	// when the key has no row.
	FRegRead = "reg-read"
	// FRegInsert is INSERT ... IF NOT EXISTS: invoke {"new": V}; ok: it
	// applied; fail with "seen": not applied, the row held that value;
	// info: unknown.
	FRegInsert = "reg-insert"
	// FRegCAS is UPDATE ... SET value = new IF value = expect: invoke
	// {"expect": E, "new": V}; ok: applied; fail with "seen": not applied,
	// the row held that value (null: no row); info: unknown.
	FRegCAS = "reg-cas"
	// FRegDelete is DELETE ... IF value = expect: invoke {"expect": E};
	// ok: applied (the key has no row after it); fail with "seen": not
	// applied, the row held that value (null: no row); info: unknown. A
	// stale Paxos commit re-applied after a purge (CASSANDRA-19617) shows
	// as a value read after its delete with no write since.
	FRegDelete = "reg-delete"
)

// IsRegisterF says whether f is a register operation.
func IsRegisterF(f string) bool {
	return f == FRegRead || f == FRegInsert || f == FRegCAS || f == FRegDelete
}

// RegValue is the value of a register operation's lines. Seen is present
// on an ok read and on a fail that reports what the row held; JSON null
// there means no row.
type RegValue struct {
	Expect json.RawMessage `json:"expect,omitempty"`
	New    json.RawMessage `json:"new,omitempty"`
	Seen   json.RawMessage `json:"seen,omitempty"`
}

// NoRow is RegValue.Seen of a key without a row.
var NoRow = json.RawMessage("null")

// Op is one line of a history.
type Op struct {
	Index   int64           `json:"index"`
	Time    int64           `json:"time"` // ns since the run started, monotonic
	Process int             `json:"process"`
	Type    Type            `json:"type"`
	F       string          `json:"f"`
	Lock    string          `json:"lock,omitempty"`
	Key     string          `json:"key,omitempty"` // a register operation's register
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
	Test    string   `json:"test,omitempty"`
	Lock    string   `json:"lock,omitempty"` // recipe name
	Promise Promise  `json:"promise,omitempty"`
	Nemesis []string `json:"nemesis,omitempty"`
	Seed    int64    `json:"seed,omitempty"`
	// Spec is the run's settings as lockcheck wrote them (package spec's
	// JSON form: keys are `lockcheck run`'s flags): what `lockcheck replay`
	// and `shrink` run again. Histories written before it have only Config.
	Spec json.RawMessage `json:"spec,omitempty"`
	// Config is what the run was, as text for people and readers of
	// this format: the settings (workload, clients, locks, time, ttl,
	// interval, and those set away from their zero) and the cluster's
	// facts (nodes, paxos, pins...).
	Config map[string]string `json:"config,omitempty"`
	// Faults is how reports draw each fault kind the run may inject.
	Faults map[string]FaultStyle `json:"faults,omitempty"`
	// Foreign is what the nodes held at the run's start that lockcheck
	// did not make and does not heal (a foreign iptables rule, a node
	// down for a cause it cannot undo): the run went on over it.
	Foreign []Foreign `json:"foreign,omitempty"`
}

// ConfigProcesses is the meta config key that says how the history numbers
// its processes; ProcessesPerClient, Jepsen's numbering: client c's first
// process is c and each replacement adds the client count ("clients").
const (
	ConfigProcesses    = "processes"
	ProcessesPerClient = "per-client"
)

// ConfigRetireStuck is "true" in a run whose clients moved to a fresh lock
// name ("l0" -> "l0.1") whenever a holder was abandoned with a grant that
// never expires: the old name keeps that open hold to the end, and the new
// one is the same lock's next key, as in Jepsen's independent keys.
const ConfigRetireStuck = "retire-stuck"

// RetiresStuck says whether the run moved its clients off stuck locks
// (ConfigRetireStuck); false for a nil meta (a history without one).
func (m *Meta) RetiresStuck() bool {
	return m != nil && m.Config[ConfigRetireStuck] == "true"
}

// Clients is the run's client count (config "clients"), 0 when not said.
func (m *Meta) Clients() int {
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m.Config["clients"])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// ClientOf is process p's client, and whether the history says: under
// ProcessesPerClient, p mod clients; in a history without it, a client's
// first process only (its replacements were numbered in the order they were
// needed, which ties them to no client).
func (m *Meta) ClientOf(p int) (int, bool) {
	clients := m.Clients()
	if clients <= 0 || p < 0 {
		return 0, false
	}
	if m.Config[ConfigProcesses] == ProcessesPerClient {
		return p % clients, true
	}
	if p >= clients {
		return 0, false
	}
	return p, true
}

// RunPhases is the value of the FPhases line: how long the run asked to be
// (--time) and how long each phase really took, in milliseconds. Faults that
// are open at the deadline are closed then, and closing one can take long
// (a killed node restarts in 30-70 s): Overrun says which were open.
type RunPhases struct {
	RequestedMS int64 `json:"requested_ms"`
	// FaultsMS: clients and nemesis, until the nemesis closed its last window.
	FaultsMS int64 `json:"faults_ms"`
	// HealMS: healing what the nemesis left and waiting for a healthy cluster.
	HealMS  int64 `json:"heal_ms"`
	QuietMS int64 `json:"quiet_ms"`
	// FinalMS: the final reads.
	FinalMS int64 `json:"final_ms"`
	TotalMS int64 `json:"total_ms"`
	// Overrun names the fault windows still open at the deadline.
	Overrun []string `json:"overrun,omitempty"`
	// ScheduleWaitMS: how long the faults ran past the requested time to
	// finish a schedule dealt in full: one whose steps follow windows or
	// that has a range movement among its steps (run --schedule).
	ScheduleWaitMS int64 `json:"schedule_wait_ms,omitempty"`
	// Undealt: how many of a schedule's steps were never dealt (the run
	// ended first, their start failed, or the window they follow never
	// reached its phase).
	Undealt int `json:"undealt,omitempty"`
}

// String says it in one line, as the run's last stderr line and the report do.
func (p RunPhases) String() string {
	ms := func(v int64) string {
		return (time.Duration(v) * time.Millisecond).Round(100 * time.Millisecond).String()
	}
	s := fmt.Sprintf("ran %s for a requested %s: faults and clients %s", ms(p.TotalMS), ms(p.RequestedMS), ms(p.FaultsMS))
	if len(p.Overrun) > 0 {
		s += fmt.Sprintf(" (%s still open at the deadline, closed after it)", strings.Join(p.Overrun, ", "))
	}
	if p.ScheduleWaitMS > 0 {
		s += fmt.Sprintf(" (%s of it past the requested time, dealing the rest of its faults)", ms(p.ScheduleWaitMS))
	}
	if p.Undealt > 0 {
		s += fmt.Sprintf(" (%d schedule steps never dealt)", p.Undealt)
	}
	return s + fmt.Sprintf(", heal %s, quiet %s, final reads %s", ms(p.HealMS), ms(p.QuietMS), ms(p.FinalMS))
}
