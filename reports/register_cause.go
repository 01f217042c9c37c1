package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// A register's anomaly has a mechanism the timeline alone can show: a key
// that held a value again after a delete of that value, or a CAS that
// replaced it, applied, with no write of it sent since. That delete or
// write was lost, whatever lost it, and the windows between its answer and
// the sighting are where it was lost: on a purge (a compaction past gc_grace_seconds, a Paxos repair
// under paxos_state_purging repaired) that is how a deleted value comes
// back, through a replica that missed the delete or a stale Paxos commit
// (CASSANDRA-19617).

// regSighting is an operation whose answer shows what a key held: an ok
// read, a failed write or delete that says what it saw, or an applied CAS
// or delete, which held its expected value.
type regSighting struct {
	inv, ret history.Op
	value    json.RawMessage
}

// regSuperseded is an applied DELETE ... IF value = expect, or an
// applied CAS that replaced expect by another value (by).
type regSuperseded struct {
	inv, ret history.Op
	value    json.RawMessage
	by       json.RawMessage // the CAS's new value; nil for a delete
}

// deletedValueBack is the cause of a register anomaly on key a.Lock in
// which the key held a value after a delete or CAS that superseded it
// applied and nothing wrote that value since; it names the first such
// sighting, the superseding operation, and the fault windows between them.
func deletedValueBack(a checker.Anomaly, faults []faultView, tl *causeTimeline) (string, bool) {
	if a.Kind != checker.KindNonLinearizable || a.Lock == "" {
		return "", false
	}
	ops := a.Ops
	if tl != nil {
		ops = tl.ops
	}
	var (
		superseded []regSuperseded
		writes     []regWrite
		seen       []regSighting
		pending    = map[int]history.Op{}
	)
	for _, op := range ops {
		if op.Key != a.Lock || !history.IsRegisterF(op.F) {
			continue
		}
		var v history.RegValue
		if len(op.Value) > 0 && json.Unmarshal(op.Value, &v) != nil {
			continue
		}
		if op.Type == history.Invoke {
			pending[op.Process] = op
			continue
		}
		inv, ok := pending[op.Process]
		if !ok || inv.F != op.F {
			continue
		}
		delete(pending, op.Process)
		var iv history.RegValue
		_ = json.Unmarshal(inv.Value, &iv)
		if (op.F == history.FRegInsert || op.F == history.FRegCAS) && op.Type != history.Fail {
			done := op.Time
			if op.Type == history.Info {
				done = checker.Never // it may take effect at any time after
			}
			writes = append(writes, regWrite{sent: inv.Time, done: done, value: iv.New})
		}
		switch {
		case op.Type == history.OK && op.F == history.FRegDelete:
			superseded = append(superseded, regSuperseded{inv: inv, ret: op, value: iv.Expect})
			seen = append(seen, regSighting{inv: inv, ret: op, value: iv.Expect})
		case op.Type == history.OK && op.F == history.FRegCAS:
			if !sameJSON(iv.Expect, iv.New) {
				superseded = append(superseded, regSuperseded{inv: inv, ret: op, value: iv.Expect, by: iv.New})
			}
			seen = append(seen, regSighting{inv: inv, ret: op, value: iv.Expect})
		case (op.Type == history.OK && op.F == history.FRegRead) || op.Type == history.Fail:
			if len(v.Seen) > 0 && !isNull(v.Seen) {
				seen = append(seen, regSighting{inv: inv, ret: op, value: v.Seen})
			}
		}
	}
	for _, inv := range pending { // never answered: may take effect any time
		var iv history.RegValue
		if (inv.F == history.FRegInsert || inv.F == history.FRegCAS) && json.Unmarshal(inv.Value, &iv) == nil {
			writes = append(writes, regWrite{sent: inv.Time, done: checker.Never, value: iv.New})
		}
	}
	for _, s := range seen {
		for _, d := range superseded {
			if d.ret.Time >= s.inv.Time || !sameJSON(d.value, s.value) || writtenSince(writes, s.value, d.inv.Time, s.ret.Time) {
				continue
			}
			return deletedValueText(a.Lock, d, s, faults), true
		}
	}
	return "", false
}

// regWrite is an insert or CAS that may have applied (not refused): sent
// and answered (checker.Never: unknown or never answered).
type regWrite struct {
	sent, done int64
	value      json.RawMessage
}

// writtenSince says whether a write of value may have taken effect between
// from and to: one sent before to and not answered before from. Then the
// value may be back by it, not by a lost delete.
func writtenSince(writes []regWrite, value json.RawMessage, from, to int64) bool {
	for _, w := range writes {
		if w.sent <= to && w.done >= from && sameJSON(w.value, value) {
			return true
		}
	}
	return false
}

func deletedValueText(key string, d regSuperseded, s regSighting, faults []faultView) string {
	how := "read it"
	switch {
	case s.ret.F == history.FRegDelete:
		how = "found it and deleted it (applied)"
	case s.ret.F == history.FRegCAS && s.ret.Type == history.OK:
		how = "found it and replaced it (applied)"
	case s.ret.Type == history.Fail:
		how = "was refused, the row holding it"
	}
	subject, stmt, lost := "a deleted value", fmt.Sprintf("DELETE ... IF value = %s", d.value), "delete"
	if d.by != nil {
		subject, stmt, lost = "an overwritten value", fmt.Sprintf("UPDATE ... SET value = %s IF value = %s", d.by, d.value), "write"
	}
	text := fmt.Sprintf("%s came back: process %d's %s on key %s was answered applied at %s, nothing wrote %s after it was "+
		"sent, and process %d's %s invoked at %s %s (answered at %s): the %s was lost",
		subject, d.ret.Process, stmt, key, secs(d.ret.Time), s.value, s.ret.Process, s.ret.F, secs(s.inv.Time), how, secs(s.ret.Time), lost)
	var between []string
	for _, w := range faults {
		if w.Start > s.inv.Time || effectEnd(w) < d.ret.Time {
			continue
		}
		between = append(between, windowText(w))
	}
	if len(between) == 0 {
		return text + "; no fault window lies between them"
	}
	const most = 8
	more := ""
	if len(between) > most {
		more = fmt.Sprintf(" and %d more", len(between)-most)
		between = between[:most]
	}
	return text + "; between them: " + strings.Join(between, "; ") + more + ". Two ways a superseded value comes back after a purge: " +
		"a replica that missed the later write keeps the value past a tombstone's purge (gc_grace_seconds shorter than its " +
		"outage), or Paxos re-applies a stale commit once the key's newer Paxos state was purged (CASSANDRA-19617, " +
		"4.1.0 to 4.1.5)"
}

// windowText says a window as the history has it: kind, what it did, where
// and when.
func windowText(w faultView) string {
	s := w.Kind
	if v := bytes.TrimSpace(w.Value); len(v) > 0 && !isNull(v) {
		s += " " + shorten(v)
	}
	if len(w.Nodes) > 0 {
		s += " on " + strings.Join(w.Nodes, ",")
	}
	return s + fmt.Sprintf(" (%s – %s)", secs(w.Start), secs(w.End))
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), history.NoRow) }

// sameJSON compares two register values as JSON (1 and 1.0 alike).
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}
