package checker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"

	"github.com/lockcheck/lockcheck/history"
)

// The protected resource (as Jepsen's etcd lock test): each lock guards a
// set. An add (invoke value: the element) is one read-modify-write critical
// section; a read returns the set (ok value: an array). The last ok read of
// a lock is its final read. The rules:
//   - every ok add that returned before the final read was invoked is in it
//     (lost-add); an info add may or may not be;
//   - no read holds an element twice (duplicate-element);
//   - the final read holds nothing that was only ever refused
//     (failed-add-present) or never added (phantom-element);
//   - an ok add runs inside a hold of its process. One that does not, while
//     another process acquired the lock after that process's hold began, is
//     a stale-holder write; one by a process that never held the lock is one
//     too. An add that merely outlived its process's hold while nobody else
//     acquired is a late-write finding: nobody could have been harmed.
//   - under the fenced promise the resource orders writes by token, not by
//     time: a write acknowledged after a newer holder acquired is legal as
//     long as the resource had not yet seen a newer token. Only an add
//     invoked after an ok add of a newer hold had returned proves the
//     resource took a stale token; the others are late-write findings. (A
//     stale write that lands after the newer one and overwrites it shows up
//     as a lost-add.)

// elemKey is an element's canonical JSON text, so that the same element
// written two ways (1 and 1.0, reordered object keys, "\u0041" and "A") is
// one element. Plain integers and strings without escapes, what clients
// write, are already canonical and skip the decoding.
func elemKey(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if isCanonicalScalar(raw) {
		return string(raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw) // the reader validated it; keep what came
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "<" and "\u003c" are one element
	if enc.Encode(canonicalNumbers(v)) != nil {
		return string(raw)
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// isCanonicalScalar reports an integer without leading zeros or a string of
// printable ASCII without escapes: text the encoder below writes unchanged.
func isCanonicalScalar(raw []byte) bool {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		for _, c := range raw[1 : len(raw)-1] {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
				return false
			}
		}
		return true
	}
	digits := bytes.TrimPrefix(raw, []byte("-"))
	if len(digits) == 0 || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// canonicalNumbers rewrites every number to one exact text: an integer
// without fraction or exponent (1.0, 1e0 and 10e-1 are all 1), any other
// number as its shortest exact decimal. Floats would merge large integers.
func canonicalNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		var r big.Rat
		if _, ok := r.SetString(v.String()); !ok {
			return v
		}
		if r.IsInt() {
			return json.Number(r.Num().String())
		}
		// Decimal text has a terminating expansion, so FloatPrec is exact.
		n, _ := r.FloatPrec()
		return json.Number(r.FloatString(n))
	case []any:
		for i := range v {
			v[i] = canonicalNumbers(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = canonicalNumbers(v[k])
		}
	}
	return v
}

type lockRes struct {
	adds  map[string][]*call
	okAdd []*call
	reads []*call
}

func (h *hist) checkResource(holds []Hold, fenced bool) checkOutput {
	out := checkOutput{result: CheckResult{Name: CheckResource, Verdict: Valid}}
	perKind := map[string]int{}
	byLock := map[string]*lockRes{}
	get := func(l string) *lockRes {
		r := byLock[l]
		if r == nil {
			r = &lockRes{adds: map[string][]*call{}}
			byLock[l] = r
		}
		return r
	}
	for i := range h.calls {
		c := &h.calls[i]
		switch c.f {
		case history.FAdd:
			r := get(c.lock)
			k := elemKey(h.ops[c.invIdx].Value)
			r.adds[k] = append(r.adds[k], c)
			if c.typ == history.OK {
				r.okAdd = append(r.okAdd, c)
			}
		case history.FRead:
			if c.typ == history.OK {
				get(c.lock).reads = append(get(c.lock).reads, c)
			}
		}
	}
	if len(byLock) == 0 {
		out.result.Skipped = true
		out.result.Detail = "no add or read operations"
		return out
	}
	// Holds by process and lock, and by lock, ordered by start.
	mine := map[procLock][]*Hold{}
	all := map[string][]*Hold{}
	for i := range holds {
		hd := &holds[i]
		mine[procLock{hd.Process, hd.Lock}] = append(mine[procLock{hd.Process, hd.Lock}], hd)
		all[hd.Lock] = append(all[hd.Lock], hd)
	}
	locks := make([]string, 0, len(byLock))
	for l := range byLock {
		locks = append(locks, l)
	}
	sort.Strings(locks)
	var nAnom, nAdds, noFinal int
	for _, l := range locks {
		r := byLock[l]
		var seen tokenOrder
		if fenced {
			seen = newTokenOrder(r.okAdd, mine, l)
		}
		nAdds += len(r.okAdd)
		var final *call
		var finalSet map[string]int
		for _, rd := range r.reads {
			set, err := h.readSet(rd)
			if err != nil {
				nAnom++
				out.add(Anomaly{Kind: KindMalformedRead, Check: CheckResource, Lock: l, Processes: []int{rd.proc},
					Start: rd.inv, End: rd.ret, Message: fmt.Sprintf("ok read of lock %q: value is not an array: %v", l, err),
					Ops: h.opsOf(rd)}, h.cfg.maxReports, perKind)
				continue
			}
			for k, n := range set {
				if n > 1 {
					nAnom++
					out.add(Anomaly{Kind: KindDuplicate, Check: CheckResource, Lock: l, Processes: []int{rd.proc},
						Start: rd.inv, End: rd.ret,
						Message: fmt.Sprintf("read of lock %q holds element %s %d times", l, k, n),
						Ops:     append(h.opsOf(rd), h.addOps(r.adds[k])...)}, h.cfg.maxReports, perKind)
				}
			}
			if final == nil || rd.ret > final.ret {
				final, finalSet = rd, set
			}
		}
		if final == nil {
			if len(r.okAdd) > 0 {
				noFinal++
			}
		} else {
			for _, a := range r.okAdd {
				k := elemKey(h.ops[a.invIdx].Value)
				if a.ret < final.inv && finalSet[k] == 0 {
					nAnom++
					out.add(Anomaly{Kind: KindLostAdd, Check: CheckResource, Lock: l, Processes: []int{a.proc, final.proc},
						Start: a.inv, End: final.ret,
						Message: fmt.Sprintf("add of %s to lock %q by process %d was acknowledged at %s but the final read at %s lacks it",
							k, l, a.proc, fmtTime(a.ret), fmtTime(final.ret)),
						Ops: h.opsOf(a, final)}, h.cfg.maxReports, perKind)
				}
			}
			keys := make([]string, 0, len(finalSet))
			for k := range finalSet {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				attempts := r.adds[k]
				if len(attempts) == 0 {
					nAnom++
					out.add(Anomaly{Kind: KindPhantom, Check: CheckResource, Lock: l, Processes: []int{final.proc},
						Start: final.inv, End: final.ret,
						Message: fmt.Sprintf("final read of lock %q holds %s, which no process added", l, k),
						Ops:     h.opsOf(final)}, h.cfg.maxReports, perKind)
					continue
				}
				refused := true
				for _, a := range attempts {
					refused = refused && a.typ == history.Fail
				}
				if refused {
					nAnom++
					out.add(Anomaly{Kind: KindFailedAddPresent, Check: CheckResource, Lock: l, Processes: []int{attempts[0].proc},
						Start: attempts[0].inv, End: final.ret,
						Message: fmt.Sprintf("final read of lock %q holds %s, whose add failed (a refused write took effect)", l, k),
						Ops:     append(h.addOps(attempts), h.opsOf(final)...)}, h.cfg.maxReports, perKind)
				}
			}
		}
		// Stale-holder writes.
		for _, a := range r.okAdd {
			ph := mine[procLock{a.proc, l}]
			// The process's latest hold that began by the add's invocation.
			i := sort.Search(len(ph), func(i int) bool { return ph[i].Start > a.inv }) - 1
			if i >= 0 && a.ret <= ph[i].End {
				continue
			}
			if i < 0 {
				nAnom++
				out.add(Anomaly{Kind: KindStaleWrite, Check: CheckResource, Lock: l, Processes: []int{a.proc},
					Start: a.inv, End: a.ret,
					Message: fmt.Sprintf("add by process %d to lock %q was acknowledged, but the process did not hold the lock", a.proc, l),
					Ops:     h.opsOf(a)}, h.cfg.maxReports, perKind)
				continue
			}
			hd := ph[i]
			var newer *Hold
			others := all[l]
			j := sort.Search(len(others), func(j int) bool { return others[j].Start > hd.Start })
			for ; j < len(others) && others[j].Start < a.ret; j++ {
				if others[j].Process != a.proc {
					newer = others[j]
					break
				}
			}
			if newer != nil && fenced && !seen.newerReturnedBefore(hd.Start, a.inv) {
				out.findings = append(out.findings, Anomaly{Kind: KindLateWrite, Check: CheckResource, Lock: l, Processes: []int{a.proc, newer.Process},
					Start: max(hd.End, a.inv), End: a.ret,
					Message: fmt.Sprintf("add by process %d to lock %q was acknowledged at %s after its hold ended (%s at %s) and process %d acquired at %s, but before any add of a newer hold returned: a fenced resource may order it first",
						a.proc, l, fmtTime(a.ret), hd.Ended, fmtTime(hd.End), newer.Process, fmtTime(newer.Start)),
					Ops: h.opsOf(a)})
				continue
			}
			if newer != nil {
				nAnom++
				ops := h.opsOf(a)
				if hd.acq != nil {
					ops = append(h.opsOf(hd.acq), ops...)
				}
				if newer.acq != nil {
					ops = append(ops, h.opsOf(newer.acq)...)
				}
				out.add(Anomaly{Kind: KindStaleWrite, Check: CheckResource, Lock: l, Processes: []int{a.proc, newer.Process},
					Start: max(hd.End, a.inv), End: a.ret,
					Message: fmt.Sprintf("add by process %d to lock %q was acknowledged at %s after its hold ended (%s at %s) and process %d acquired the lock at %s",
						a.proc, l, fmtTime(a.ret), hd.Ended, fmtTime(hd.End), newer.Process, fmtTime(newer.Start)),
					Ops: ops}, h.cfg.maxReports, perKind)
				continue
			}
			out.findings = append(out.findings, Anomaly{Kind: KindLateWrite, Check: CheckResource, Lock: l, Processes: []int{a.proc},
				Start: max(hd.End, a.inv), End: a.ret,
				Message: fmt.Sprintf("add by process %d to lock %q was acknowledged at %s, after its hold ended (%s at %s); nobody else held the lock meanwhile",
					a.proc, l, fmtTime(a.ret), hd.Ended, fmtTime(hd.End)),
				Ops: h.opsOf(a)})
		}
	}
	switch {
	case nAnom > 0:
		out.result.Verdict = Invalid
		out.result.Detail = fmt.Sprintf("%d anomalies in %d acknowledged adds on %d locks", nAnom, nAdds, len(locks))
	case noFinal > 0:
		out.result.Verdict = Unknown
		out.result.Detail = fmt.Sprintf("%d of %d locks with acknowledged adds have no final read", noFinal, len(locks))
	default:
		out.result.Detail = fmt.Sprintf("%d acknowledged adds on %d locks, none lost, duplicated or stale", nAdds, len(locks))
	}
	return out
}

// tokenOrder answers, for a fenced resource, whether an add of a hold newer
// than a given one had returned by a given time: ok adds sorted by return,
// with the latest hold start among those returned so far.
type tokenOrder struct {
	ret       []int64
	maxHoldAt []int64
}

func newTokenOrder(adds []*call, mine map[procLock][]*Hold, lock string) tokenOrder {
	type entry struct{ ret, holdStart int64 }
	es := make([]entry, 0, len(adds))
	for _, a := range adds {
		ph := mine[procLock{a.proc, lock}]
		i := sort.Search(len(ph), func(i int) bool { return ph[i].Start > a.inv }) - 1
		if i < 0 {
			continue // not in any hold: carries no token
		}
		es = append(es, entry{a.ret, ph[i].Start})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].ret < es[j].ret })
	t := tokenOrder{ret: make([]int64, len(es)), maxHoldAt: make([]int64, len(es))}
	latest := int64(-1 << 62)
	for i, e := range es {
		latest = max(latest, e.holdStart)
		t.ret[i], t.maxHoldAt[i] = e.ret, latest
	}
	return t
}

// newerReturnedBefore: did an ok add of a hold that started after holdStart
// return before t?
func (o tokenOrder) newerReturnedBefore(holdStart, t int64) bool {
	i := sort.Search(len(o.ret), func(i int) bool { return o.ret[i] >= t }) - 1
	return i >= 0 && o.maxHoldAt[i] > holdStart
}

func (h *hist) readSet(rd *call) (map[string]int, error) {
	var elems []json.RawMessage
	if v := h.ops[rd.retIdx].Value; len(v) > 0 {
		if err := json.Unmarshal(v, &elems); err != nil {
			return nil, err
		}
	}
	set := make(map[string]int, len(elems))
	for _, e := range elems {
		set[elemKey(e)]++
	}
	return set, nil
}

func (h *hist) addOps(cs []*call) []history.Op {
	if len(cs) > 5 {
		cs = cs[:5]
	}
	return h.opsOf(cs...)
}
