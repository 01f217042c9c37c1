package checker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"

	"github.com/lockcheck/lockcheck/history"
)

// The protected resource (as Jepsen's etcd lock test and its set-full
// checker): each lock guards a set. An add (invoke value: the element) is one
// read-modify-write critical section; a read returns the set (ok value: an
// array). The rules:
//   - every ok read holds every element known to be in the set before the
//     read was invoked (lost-add, reported once per element, at the first
//     read that lacks it). An element is known from the return of its first
//     ok add, or from the return of the first ok read that held it (an info
//     add, or one still running, that a read saw has taken effect, as in
//     Jepsen's set-full), whichever comes first; an info add that no read
//     has seen may or may not be there;
//   - no read holds an element twice (duplicate-element);
//   - no read holds an element whose every add attempt invoked before the
//     read returned was refused (failed-add-present), nor one that no process
//     had tried to add by then (phantom-element: never added, or only later);
//   - an ok add runs inside a hold of its process. One by a process that
//     held no lock is a stale-holder write. One that outlived its process's
//     hold is judged against every other process's hold that overlaps it in
//     real time (holds dated conservatively: from the ok acquire's return to
//     the release's invocation or the lease counted from the grant's
//     invocation): if one does, it is a stale-holder write; if none does,
//     a late-write finding (nobody could have been harmed).
//   - under the fenced promise the resource orders writes by token, not by
//     time, and overlapping holds are allowed: what must not happen is a
//     write accepted with a token lower than one the resource had already
//     acknowledged before that write was invoked (stale-holder write, inside
//     the writer's hold or not). A write that outlived its hold without that
//     is a late-write finding. Tokens are the ok acquires' values; a lock
//     whose grants carry none is judged by hold order instead (a hold that
//     started later stands for a newer token).

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

// elemInfo is what the checks keep of one element of a lock's set. It holds
// no pointer, so that the garbage collector never scans the elements (the
// bulk of the memory of a long history).
type elemInfo struct {
	ikey int64 // the element when an integer (skey 0)
	// The attempt shown in anomalies: the first ok one, else the first.
	// Its completion is kept as offsets from its invocation (64 bytes an
	// element in all); a latency past 4 s goes to resState.bigRet.
	inv, invIdx              int64
	retD, retIdxD            uint32 // retIdxD 0: no completion yet
	attempts, fails, running int32
	stamp                    uint32 // the last read that held it
	proc                     int32
	skey                     int32 // 1 + its canonical text's index in resState.keys; 0 for an integer
	typ                      byte  // of the shown attempt: 'o'k, 'f'ail, 'i'nfo
	missing                  bool  // reported lost, or every attempt refused
	acked                    bool  // an add of it returned ok (the shown attempt: its return is okRet)
	seenFirst                bool  // a read held it before any ok add returned (resState.seen)
	bigRet                   bool
}

// ret is the shown attempt's completion time, Never without one.
func (r *resState) ret(el *elemInfo) int64 {
	switch {
	case el.retIdxD == 0:
		return Never
	case el.bigRet:
		return r.bigRet[el]
	}
	return el.inv + int64(el.retD)
}

func (el *elemInfo) retIdx() int64 {
	if el.retIdxD == 0 {
		return -1
	}
	return el.invIdx + int64(el.retIdxD)
}

// setRet records the shown attempt's completion.
func (r *resState) setRet(el *elemInfo, ret, retIdx int64) {
	el.retIdxD = uint32(min(retIdx-el.invIdx, math.MaxUint32))
	d := ret - el.inv
	el.bigRet = d > math.MaxUint32
	if el.bigRet {
		if r.bigRet == nil {
			r.bigRet = map[*elemInfo]int64{}
		}
		r.bigRet[el] = ret
	} else {
		el.retD = uint32(d)
	}
}

// okRet is the return of the element's first ok add, or Never.
func (r *resState) okRet(el *elemInfo) int64 {
	if el.acked {
		return r.ret(el)
	}
	return Never
}

// known is when the element is known to be in the set: the earlier of its
// first ok add's return and the return of the first read that held it;
// Never if neither happened yet.
func (r *resState) known(el *elemInfo) int64 {
	if el.seenFirst {
		return r.seen[el].ret
	}
	return r.okRet(el)
}

// seenRec is the read that made an element known before any ok add did.
type seenRec struct {
	proc     int32
	inv, ret int64
	idx      [2]int64
}

// elemChunk is how many elements are allocated at once: a lock's set grows
// by chunks, never copied, with little slack.
const elemChunk = 64

func typByte(t history.Type) byte {
	switch t {
	case history.OK:
		return 'o'
	case history.Fail:
		return 'f'
	}
	return 'i'
}

func byteTyp(b byte) history.Type {
	switch b {
	case 'o':
		return history.OK
	case 'f':
		return history.Fail
	}
	return history.Info
}

// text is the element's canonical JSON text.
func (r *resState) text(el *elemInfo) string {
	if el.skey == 0 {
		return strconv.FormatInt(el.ikey, 10)
	}
	return r.keys[el.skey-1]
}

func (r *resState) el(i int32) *elemInfo { return &r.chunks[i/elemChunk][i%elemChunk] }

// elemID is an element's identity: an integer that fits int64 (what clients
// write; kept without its text), else its canonical text (elemKey).
func elemID(raw json.RawMessage) (int64, string) {
	raw = bytes.TrimSpace(raw)
	if n := len(raw); n > 0 && n < 19 && isCanonicalScalar(raw) && raw[0] != '"' {
		if i, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return i, ""
		}
	}
	k := elemKey(raw)
	// A whole number written another way (1e1, 10.0) has the canonical text
	// of its plain form: it must land on the same integer identity, or 10
	// and 1e1 would be two elements.
	if n := len(k); n > 0 && n < 20 && k[0] != '"' && isCanonicalScalar([]byte(k)) {
		if i, err := strconv.ParseInt(k, 10, 64); err == nil {
			return i, ""
		}
	}
	return 0, k
}

func (r *resState) lookup(raw json.RawMessage) (int32, bool, int64, string) {
	ik, sk := elemID(raw)
	var i int32
	var ok bool
	if sk == "" {
		i, ok = r.iidx.find(r, ik)
	} else {
		i, ok = r.idx[sk]
	}
	return i, ok, ik, sk
}

func (r *resState) key(ik int64, sk string) string {
	if sk == "" {
		return strconv.FormatInt(ik, 10)
	}
	return sk
}

// ops rebuilds the lines of the element's shown attempt.
func (r *resState) ops(el *elemInfo) []history.Op {
	lock := r.l.name
	v := json.RawMessage(r.text(el))
	out := []history.Op{{Index: el.invIdx, Time: el.inv, Process: int(el.proc), Type: history.Invoke, F: history.FAdd, Lock: lock, Value: v}}
	if el.retIdxD != 0 {
		out = append(out, history.Op{Index: el.retIdx(), Time: r.ret(el), Process: int(el.proc), Type: byteTyp(el.typ), F: history.FAdd, Lock: lock, Value: v})
	}
	return out
}

// resState is one lock's protected set.
type resState struct {
	l        *lockSt
	iidx     intIndex
	idx      map[string]int32
	chunks   [][]elemInfo // the elements, by index
	nelems   int32
	keys     []string              // canonical texts of the elements that are not integers
	seen     map[*elemInfo]seenRec // elements a read held before any ok add returned
	bigRet   map[*elemInfo]int64   // shown attempts' returns that are more than 4 s after their invocation
	knownAt  []int64               // known of the elements, in order (lines come in time order), after the first knownN
	knownN   int                   // elements known before every read in flight or to come was invoked
	readInvs []int64               // invocations of the reads in flight
	missRets []int64               // known of the elements reported lost or failed, sorted
	running  []*call               // adds in flight
	deferred map[int32][]*call     // reads that held an element whose attempts were all refused or running
	okAdds   int
	okReads  int
	// lastReadInv is the latest invocation of an ok read: an acknowledged
	// add that returned after it, and that no read held, is one no read
	// covers (finish counts them).
	lastReadInv int64
	hasOps      bool
	readSeq     uint32
}

func (l *lockSt) resState() *resState {
	if l.res == nil {
		l.res = &resState{l: l, idx: map[string]int32{}}
	}
	return l.res
}

func (r *resState) anomaly(a Anomaly) {
	e := r.l.e
	e.nResAnom++
	e.resource.add(a, e.cfg.maxReports, e.resKinds)
}

func (r *resState) finding(a Anomaly) {
	e := r.l.e
	if len(e.resource.findings) < e.cfg.maxReports*10 {
		e.resource.findings = append(e.resource.findings, a)
	}
}

func (r *resState) invoke(c *call) {
	if c.f == history.FRead {
		r.readInvs = append(r.readInvs, c.inv)
		return
	}
	if c.f != history.FAdd {
		return
	}
	r.hasOps = true
	i, ok, ik, sk := r.lookup(c.invLine.value)
	if !ok {
		i = r.nelems
		r.nelems++
		nel := elemInfo{ikey: ik, proc: int32(c.proc), inv: c.inv, invIdx: c.invLine.index, typ: 'i'}
		if int(i/elemChunk) == len(r.chunks) {
			r.chunks = append(r.chunks, make([]elemInfo, 0, elemChunk))
		}
		if sk == "" {
			r.chunks[i/elemChunk] = append(r.chunks[i/elemChunk], nel)
			r.iidx.insert(r, ik, i)
		} else {
			r.idx[sk] = i
			r.keys = append(r.keys, sk)
			nel.skey = int32(len(r.keys))
			r.chunks[i/elemChunk] = append(r.chunks[i/elemChunk], nel)
		}
	}
	el := r.el(i)
	el.attempts++
	el.running++
	r.running = append(r.running, c)
	c.elem = i
}

// complete takes a completed read or add, or (at the end) one that never
// completed.
func (r *resState) complete(c *call) {
	if c.f == history.FRead {
		if j := slices.Index(r.readInvs, c.inv); j >= 0 {
			r.readInvs[j] = r.readInvs[len(r.readInvs)-1]
			r.readInvs = r.readInvs[:len(r.readInvs)-1]
		}
		if c.done && c.typ == history.OK {
			r.hasOps = true
			r.read(c)
		}
		return
	}
	j := slices.Index(r.running, c)
	if j < 0 {
		return
	}
	last := len(r.running) - 1
	r.running[j] = r.running[last]
	r.running[last] = nil
	r.running = r.running[:last]
	i := c.elem
	el := r.el(i)
	el.running--
	typ := c.typ
	if !c.done {
		typ = history.Info
	}
	switch typ {
	case history.Fail:
		el.fails++
	case history.OK:
		r.okAdds++
		if !el.acked {
			if r.bigRet != nil {
				delete(r.bigRet, el)
			}
			el.proc, el.inv, el.invIdx, el.typ = int32(c.proc), c.inv, c.invLine.index, 'o'
			r.setRet(el, c.ret, c.retLine.index)
			r.learn(el, c.ret)
			el.acked = true
		}
	}
	if el.retIdxD == 0 && el.inv == c.inv && int(el.proc) == c.proc && c.done {
		r.setRet(el, c.ret, c.retLine.index)
		el.typ = typByte(typ)
	}
	if reads := r.deferred[i]; reads != nil && el.running == 0 {
		delete(r.deferred, i)
		if el.fails == el.attempts {
			for _, rd := range reads {
				r.failedPresent(el, rd)
			}
			r.exclude(el)
		}
	} else if typ != history.Fail {
		delete(r.deferred, i)
	}
	if typ == history.OK {
		r.judge(c)
	}
}

func (r *resState) failedPresent(el *elemInfo, rd *call) {
	l := r.l.name
	r.anomaly(Anomaly{Kind: KindFailedAddPresent, Check: CheckResource, Lock: l, Processes: []int{int(el.proc)},
		Start: min(el.inv, rd.inv), End: rd.ret,
		Message: fmt.Sprintf("read of lock %q holds %s, whose add failed (a refused write took effect)", l, r.text(el)),
		Ops:     append(r.ops(el), opsOf(rd)...)})
}

// read checks one ok read as Jepsen's set-full does.
func (r *resState) read(rd *call) {
	l := r.l.name
	var raw []json.RawMessage
	if v := rd.retLine.value; len(v) > 0 {
		if err := json.Unmarshal(v, &raw); err != nil {
			r.anomaly(Anomaly{Kind: KindMalformedRead, Check: CheckResource, Lock: l, Processes: []int{rd.proc},
				Start: rd.inv, End: rd.ret, Message: fmt.Sprintf("ok read of lock %q: value is not an array: %v", l, err),
				Ops: opsOf(rd)})
			return
		}
	}
	r.okReads++
	r.lastReadInv = max(r.lastReadInv, rd.inv)
	r.readSeq++
	seq := r.readSeq
	var dups, phantoms map[string]int
	present := 0
	for _, e := range raw {
		i, ok, ik, sk := r.lookup(e)
		if !ok {
			if phantoms == nil {
				phantoms = map[string]int{}
			}
			phantoms[r.key(ik, sk)]++
			continue
		}
		el := r.el(i)
		if el.stamp == seq {
			if dups == nil {
				dups = map[string]int{}
			}
			k := r.text(el)
			if dups[k] == 0 {
				dups[k] = 1
			}
			dups[k]++
			continue
		}
		el.stamp = seq
		if !el.missing && r.known(el) < rd.inv {
			present++
		}
		if el.fails+el.running == el.attempts {
			if el.running == 0 {
				r.failedPresent(el, rd)
				continue // refused: never known, never required
			} else {
				if r.deferred == nil {
					r.deferred = map[int32][]*call{}
				}
				r.deferred[i] = append(r.deferred[i], rd)
				rd.kept = true
			}
		}
		if !el.acked && !el.seenFirst {
			// Seen: from now on every read must hold it, whatever its add's
			// outcome was (set-full).
			if r.seen == nil {
				r.seen = map[*elemInfo]seenRec{}
			}
			r.learn(el, rd.ret)
			r.seen[el] = seenRec{proc: int32(rd.proc), inv: rd.inv, ret: rd.ret, idx: [2]int64{rd.invLine.index, rd.retLine.index}}
			el.seenFirst = true
		}
	}
	for _, k := range sortedStrings(phantoms) {
		if phantoms[k] > 1 {
			if dups == nil {
				dups = map[string]int{}
			}
			dups[k] = phantoms[k]
		}
		r.anomaly(Anomaly{Kind: KindPhantom, Check: CheckResource, Lock: l, Processes: []int{rd.proc},
			Start: rd.inv, End: rd.ret,
			Message: fmt.Sprintf("read of lock %q at %s holds %s, which no process had tried to add by then", l, fmtTime(rd.ret), k),
			Ops:     opsOf(rd)})
	}
	for _, k := range sortedStrings(dups) {
		ops := opsOf(rd)
		if i, ok, _, _ := r.lookup(json.RawMessage(k)); ok {
			ops = append(ops, r.ops(r.el(i))...)
		}
		r.anomaly(Anomaly{Kind: KindDuplicate, Check: CheckResource, Lock: l, Processes: []int{rd.proc},
			Start: rd.inv, End: rd.ret,
			Message: fmt.Sprintf("read of lock %q holds element %s %d times", l, k, dups[k]),
			Ops:     ops})
	}
	required := r.knownN + countBefore(r.knownAt, rd.inv) - countBefore(r.missRets, rd.inv)
	if present >= required {
		return
	}
	for i := range r.nelems {
		el := r.el(i)
		if el.stamp == seq || el.missing || r.known(el) >= rd.inv {
			continue
		}
		r.exclude(el)
		if r.okRet(el) < rd.inv {
			r.anomaly(Anomaly{Kind: KindLostAdd, Check: CheckResource, Lock: l, Processes: []int{int(el.proc), rd.proc},
				Start: el.inv, End: rd.ret,
				Message: fmt.Sprintf("add of %s to lock %q by process %d was acknowledged at %s but the read invoked at %s (returned at %s) lacks it",
					r.text(el), l, el.proc, fmtTime(r.okRet(el)), fmtTime(rd.inv), fmtTime(rd.ret)),
				Ops: append(r.ops(el), opsOf(rd)...)})
			continue
		}
		sr := r.seen[el]
		seen := []history.Op{
			{Index: sr.idx[0], Time: sr.inv, Process: int(sr.proc), Type: history.Invoke, F: history.FRead, Lock: l},
			{Index: sr.idx[1], Time: sr.ret, Process: int(sr.proc), Type: history.OK, F: history.FRead, Lock: l},
		}
		r.anomaly(Anomaly{Kind: KindLostAdd, Check: CheckResource, Lock: l, Processes: []int{int(el.proc), int(sr.proc), rd.proc},
			Start: el.inv, End: rd.ret,
			Message: fmt.Sprintf("add of %s to lock %q by process %d (outcome %s) was seen by process %d's read returned at %s, but the later read invoked at %s (returned at %s) lacks it",
				r.text(el), l, el.proc, outcome(el), sr.proc, fmtTime(sr.ret), fmtTime(rd.inv), fmtTime(rd.ret)),
			Ops: append(append(r.ops(el), seen...), opsOf(rd)...)})
	}
}

func outcome(el *elemInfo) string {
	if el.running > 0 {
		return "still running"
	}
	return string(byteTyp(el.typ))
}

// learn records that el is in the set from t on: t is the time of the line
// being read, so knownAt stays sorted.
func (r *resState) learn(el *elemInfo, t int64) {
	if el.acked || el.seenFirst {
		return // known already
	}
	if len(r.knownAt) == cap(r.knownAt) && len(r.knownAt) >= 256 {
		// Only the reads in flight and to come will count these: fold the
		// ones known before all of them into knownN rather than grow.
		floor := t
		for _, inv := range r.readInvs {
			floor = min(floor, inv)
		}
		if n := countBefore(r.knownAt, floor); n > len(r.knownAt)/2 {
			r.knownN += n
			r.knownAt = r.knownAt[:copy(r.knownAt, r.knownAt[n:])]
		}
	}
	r.knownAt = append(r.knownAt, t)
}

// exclude takes el out of the required count: it was reported lost (once is
// enough) or every attempt to add it was refused.
func (r *resState) exclude(el *elemInfo) {
	if el.missing {
		return
	}
	el.missing = true
	k := r.known(el)
	if k == Never {
		return
	}
	j := sort.Search(len(r.missRets), func(j int) bool { return r.missRets[j] > k })
	r.missRets = append(r.missRets, 0)
	copy(r.missRets[j+1:], r.missRets[j:])
	r.missRets[j] = k
}

func countBefore(sorted []int64, t int64) int {
	return sort.Search(len(sorted), func(i int) bool { return sorted[i] >= t })
}

func sortedStrings(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// judge checks an ok add against the holds (see the rules above). Every
// hold that can overlap it is known when it returns: holds to come start
// later, and the closed ones it may overlap are not yet retired.
func (r *resState) judge(a *call) {
	l := r.l
	e := l.e
	h := a.ps.latest(l)
	if h != nil && h.Start > a.inv {
		h = nil
	}
	if h == nil && a.ps.forgot(l) {
		// Its process held the lock before it held keepClosed others:
		// that hold ended by forgotAt, and its grant returned by then.
		h = &holdRec{Hold: Hold{Lock: l.name, Process: a.proc, End: a.ps.forgotAt, Ended: "ended"}, expiry: Never}
	}
	if h == nil {
		r.anomaly(Anomaly{Kind: KindStaleWrite, Check: CheckResource, Lock: l.name, Processes: []int{a.proc},
			Start: a.inv, End: a.ret,
			Message: fmt.Sprintf("add by process %d to lock %q was acknowledged, but the process did not hold the lock", a.proc, l.name),
			Ops:     opsOf(a)})
		return
	}
	// Its process has no other call in flight, so an open hold ends at its
	// expiry or later.
	end := h.End
	if h.open {
		end = h.expiry
	}
	inside := a.ret <= end
	if inside && !e.fenced {
		return
	}
	how := fmt.Sprintf("%s at %s", h.Ended, fmtTime(end))
	if h.open {
		how = "expired at " + fmtTime(end)
	}
	if h.grant == nil {
		how = fmt.Sprintf("ended by %s, before it held %d other locks", fmtTime(end), keepClosed)
	}
	if e.fenced {
		if h.grant != nil {
			l.fence.wrote(h, a)
		}
		if r.staleFenced(a, h) || inside {
			return
		}
		// Outlived its hold, but no newer holder had written: a fenced
		// resource may order it before whatever comes next.
		if o := l.overlapping(a.proc, a.inv, a.ret); o != nil {
			r.finding(Anomaly{Kind: KindLateWrite, Check: CheckResource, Lock: l.name, Processes: []int{a.proc, o.Process},
				Start: max(end, a.inv), End: a.ret,
				Message: fmt.Sprintf("add by process %d to lock %q was acknowledged at %s after its hold ended (%s) while process %d held the lock, but the resource had acknowledged no write of a newer grant or a greater token before it was invoked: a fenced resource may order it first",
					a.proc, l.name, fmtTime(a.ret), how, o.Process),
				Ops: opsOf(a)})
			return
		}
		r.lateWrite(a, end, how)
		return
	}
	if inside {
		return
	}
	if o := l.overlapping(a.proc, a.inv, a.ret); o != nil {
		r.anomaly(Anomaly{Kind: KindStaleWrite, Check: CheckResource, Lock: l.name, Processes: []int{a.proc, o.Process},
			Start: max(end, a.inv), End: a.ret,
			Message: fmt.Sprintf("add by process %d to lock %q ran from %s to %s, after its hold ended (%s), while process %d held the lock (from %s to %s)",
				a.proc, l.name, fmtTime(a.inv), fmtTime(a.ret), how, o.Process, fmtTime(o.Start), fmtTime(o.holdEnd())),
			Ops: opsOf(h.acq, a, o.acq)})
		return
	}
	r.lateWrite(a, end, how)
}

func (r *resState) lateWrite(a *call, end int64, how string) {
	l := r.l
	r.finding(Anomaly{Kind: KindLateWrite, Check: CheckResource, Lock: l.name, Processes: []int{a.proc},
		Start: max(end, a.inv), End: a.ret,
		Message: fmt.Sprintf("add by process %d to lock %q was acknowledged at %s, after its hold ended (%s); no other process held the lock while it ran",
			a.proc, l.name, fmtTime(a.ret), how),
		Ops: opsOf(a)})
}

// staleFenced applies the fenced promise's rules to an acknowledged write a
// by the holder of h (fencing.go): by grant order first, then by token.
func (r *resState) staleFenced(a *call, h *holdRec) bool {
	l := r.l
	grantRet := h.End // a forgotten hold's grant returned by its end
	if h.grant != nil {
		grantRet = h.grant.ret
	}
	if w := a.snapNewest; w != nil && w.grantInv > grantRet && w.write.proc != a.proc {
		r.anomaly(Anomaly{Kind: KindStaleWrite, Check: CheckResource, Lock: l.name, Processes: []int{a.proc, w.write.proc},
			Start: a.inv, End: a.ret,
			Message: fmt.Sprintf("add by process %d to lock %q was acknowledged at %s, but its holder was superseded: process %d's grant, invoked at %s after this holder's grant returned at %s, wrote first (acknowledged at %s, before this add was invoked at %s)%s: a stale holder's write accepted",
				a.proc, l.name, fmtTime(a.ret), w.write.proc, fmtTime(w.grantInv), fmtTime(grantRet), fmtTime(w.write.ret), fmtTime(a.inv), tokens(h, w)),
			Ops: opsOf(h.grant, a, w.grant, w.write)})
		return true
	}
	if w := a.snapToken; w != nil && h.token.number() && cmpNumbers(w.tok, h.token) > 0 {
		r.anomaly(Anomaly{Kind: KindStaleWrite, Check: CheckResource, Lock: l.name, Processes: []int{a.proc, w.write.proc},
			Start: a.inv, End: a.ret,
			Message: fmt.Sprintf("add by process %d to lock %q with fencing token %s was acknowledged at %s, but the resource had already acknowledged token %s (process %d's add returned at %s, before this add was invoked at %s): a stale token accepted",
				a.proc, l.name, h.token, fmtTime(a.ret), w.tok, w.write.proc, fmtTime(w.write.ret), fmtTime(a.inv)),
			Ops: opsOf(h.grant, a, w.write)})
		return true
	}
	return false
}

// tokens says what the tokens of a stale write and the newer one were.
func tokens(h *holdRec, w *fenceRef) string {
	switch {
	case h.token.has() && w.tok.has():
		return fmt.Sprintf(" (tokens %s and %s)", h.token, w.tok)
	case w.tok.has():
		return fmt.Sprintf(" (the newer token %s)", w.tok)
	}
	return ""
}

// holdEnd is the hold's end, or its expiry while it is open.
func (h *holdRec) holdEnd() int64 {
	if h.open {
		return h.expiry
	}
	return h.End
}

// overlapping returns the earliest-starting hold of another process that
// certainly overlaps [from, to]: it started before to and ended after from.
// An open hold whose lease ran out by from, but that a renew in flight may
// still extend, is not counted: it may not have overlapped.
func (l *lockSt) overlapping(proc int, from, to int64) *holdRec {
	var best *holdRec
	consider := func(h *holdRec, end int64) {
		if h.Process == proc || h.Start >= to || end <= from || end <= h.Start {
			return
		}
		if best == nil || h.Start < best.Start {
			best = h
		}
	}
	for _, h := range l.openHolds {
		consider(h, h.expiry)
	}
	for _, h := range l.closed {
		consider(h, h.End)
	}
	return best
}

func (r *resState) finish() {
	if r.okAdds > 0 && r.okReads == 0 {
		r.l.e.noFinal++
		return
	}
	// Acknowledged adds that no read covers: each returned after the last
	// read was invoked, and no read held it. Nothing can say whether the
	// resource kept them; the detail counts them.
	n := 0
	for i := range r.nelems {
		if el := r.el(i); el.acked && el.stamp == 0 && r.okRet(el) >= r.lastReadInv {
			n++
		}
	}
	if n > 0 {
		r.l.e.uncovered += n
		r.l.e.uncoveredLocks++
	}
}

func (e *engine) finishResource(names []string) {
	locks, adds := 0, 0
	for _, n := range names {
		if r := e.locks[n].res; r != nil && r.hasOps {
			locks++
			adds += r.okAdds
		}
	}
	out := &e.resource.result
	var unc string
	if e.uncovered > 0 {
		unc = fmt.Sprintf("; %d acknowledged adds on %d locks returned after the last read was invoked and no read held them: not judged", e.uncovered, e.uncoveredLocks)
	}
	switch {
	case locks == 0:
		out.Skipped = true
		out.Detail = "no add or read operations"
	case e.nResAnom > 0:
		out.Verdict = Invalid
		out.Detail = fmt.Sprintf("%d anomalies in %d acknowledged adds on %d locks%s", e.nResAnom, adds, locks, unc)
	case e.noFinal > 0:
		out.Verdict = Unknown
		out.Detail = fmt.Sprintf("%d of %d locks with acknowledged adds have no ok read, so nothing says whether the resource kept them%s", e.noFinal, locks, unc)
	default:
		out.Detail = fmt.Sprintf("%d acknowledged adds on %d locks, none lost, duplicated or stale%s", adds, locks, unc)
	}
}

// intIndex finds integer elements by value: open addressing over the
// elements' own ikey, 4 bytes a slot at most half full (a Go map takes
// several times that per element, and the elements are most of the memory).
type intIndex struct {
	slots []int32 // 1 + element index; 0 empty
	n     int
}

func (x *intIndex) home(k int64) uint64 {
	return (uint64(k) * 0x9E3779B97F4A7C15) >> (64 - bitsLen(len(x.slots)))
}

func bitsLen(n int) int {
	b := 0
	for n > 1 {
		n >>= 1
		b++
	}
	return b
}

func (x *intIndex) find(r *resState, k int64) (int32, bool) {
	if x.n == 0 {
		return 0, false
	}
	mask := uint64(len(x.slots) - 1)
	for j := x.home(k); ; j = (j + 1) & mask {
		s := x.slots[j]
		if s == 0 {
			return 0, false
		}
		if r.el(s-1).ikey == k {
			return s - 1, true
		}
	}
}

// insert adds element i (not yet there), whose ikey is k.
func (x *intIndex) insert(r *resState, k int64, i int32) {
	if 2*(x.n+1) > len(x.slots) {
		old := x.slots
		x.slots = make([]int32, max(16, 2*len(old)))
		for _, s := range old {
			if s != 0 {
				x.put(r.el(s-1).ikey, s)
			}
		}
	}
	x.put(k, i+1)
	x.n++
}

func (x *intIndex) put(k int64, s int32) {
	mask := uint64(len(x.slots) - 1)
	j := x.home(k)
	for x.slots[j] != 0 {
		j = (j + 1) & mask
	}
	x.slots[j] = s
}
