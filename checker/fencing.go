package checker

import (
	"fmt"

	"github.com/lockcheck/lockcheck/history"
)

// The fencing rules (the fenced promise; docs/checkers.md says them, and
// this is all the code that applies the lock's). Order is real-time grant
// order: a grant G2 is newer than G1 when G1's ok came before G2's invoke
// (grants whose calls overlap are not ordered).
//   - Re-entry: a holder's own ok acquire that returns the token it holds is
//     not a new grant, unless it released the lock in between (a release
//     that failed released nothing), whatever other grants happened
//     meanwhile. It is judged by nothing below.
//   - The lock: a new grant's token must be greater than every number token
//     granted before it on that lock (numbers of any size, by exact value;
//     token.go), and differ from every token of another kind granted before
//     it and from the token of any grant returned while it was in flight
//     (token-not-increasing otherwise: the lock's fault). A lock whose tokens
//     mix numbers with other kinds cannot be ordered: a tokens-unordered
//     finding, and the check's verdict is unknown.
//   - The resource (resource.go, judge): a write by a holder whose grant is
//     older than the grant of a write the resource had acknowledged before
//     this write was invoked is a stale-holder write, whatever the tokens
//     say; so is a write with a lower number token than one already
//     acknowledged.
//
// Each needs only what the lock had seen when a call was invoked, so a call
// takes a snapshot at its invoke (three pointers) and the lock keeps only
// the current maxima; tokens that are not numbers, which have no order, are
// kept one each (others) to find one handed out again.

// fenceRef is a grant, or a write and the grant of its hold, that set one of
// the maxima. It is never changed once made, so that snapshots may share it.
type fenceRef struct {
	tok      tokVal
	grantInv int64 // the grant's invocation: what grant order compares
	grant    *call
	write    *call // nil for a grant
}

// fenceSt is one lock's maxima.
type fenceSt struct {
	grant  *fenceRef // the grant with the greatest number token
	newest *fenceRef // the acknowledged write whose hold's grant was invoked last
	token  *fenceRef // the acknowledged write with the greatest number token
	// others holds the first grant of each token that is not a number,
	// by tokVal.key.
	others map[string]*fenceRef
	// firstNum and firstOther are the first grants with a number token and
	// with a token of another kind: a lock with both cannot be ordered.
	firstNum, firstOther *fenceRef
	// forgotten holds the tokens of processes' holds that the process
	// forgot (procSt.remember) before releasing them: a later acquire that
	// returns that token is still re-entrant.
	forgotten map[int]forgotTok
}

type forgotTok struct {
	tok      tokVal
	grant    *call // the grant of that token
	released bool
}

func (f *fenceSt) invoke(c *call) {
	switch c.f {
	case history.FAcquire:
		c.snapGrant = f.grant
	case history.FAdd:
		c.snapNewest, c.snapToken = f.newest, f.token
	}
}

// reentrant tells whether c, an ok acquire of tok, hands its process back
// the token it holds (the token of its latest hold on the lock, not
// released since), and then the grant that gave it that token.
func (l *lockSt) reentrant(c *call, tok tokVal) *call {
	if last := c.ps.latest(l); last != nil {
		if !last.released && sameToken(last.token, tok) && last.grant != nil {
			return last.grant
		}
		return nil
	}
	if ft, ok := l.fence.forgotten[c.proc]; ok && !ft.released && sameToken(ft.tok, tok) {
		return ft.grant
	}
	return nil
}

// granted judges an ok acquire's token against the tokens granted before it
// was invoked and while it was in flight. A re-entrant acquire is no new
// grant: granted returns the grant whose token it hands back, which stays
// its hold's grant (the resource orders writes by it).
func (f *fenceSt) granted(l *lockSt, c *call, tok tokVal) *call {
	e := l.e
	if !tok.has() {
		e.nNoToken++
		return nil
	}
	orig := l.reentrant(c, tok)
	delete(f.forgotten, c.proc) // its latest hold is remembered again from here
	if orig != nil {
		return orig // not a new grant
	}
	var ref *fenceRef // made once, when something keeps it
	mk := func() *fenceRef {
		if ref == nil {
			ref = &fenceRef{tok: tok, grantInv: c.inv, grant: c}
		}
		return ref
	}
	if tok.number() {
		if f.firstNum == nil {
			f.firstNum = mk()
			f.unordered(l, f.firstOther, ref)
		}
		if p := c.snapGrant; p != nil && cmpNumbers(tok, p.tok) <= 0 {
			f.report(l, c, tok, p, true)
		} else if p := f.grant; p != nil && p != c.snapGrant && cmpNumbers(tok, p.tok) == 0 {
			f.report(l, c, tok, p, false) // granted while this acquire was in flight
		}
		if f.grant == nil || cmpNumbers(tok, f.grant.tok) > 0 {
			f.grant = mk()
		}
		return nil
	}
	if f.firstOther == nil {
		f.firstOther = mk()
		f.unordered(l, f.firstNum, ref)
	}
	k := tok.key()
	if p := f.others[k]; p != nil {
		f.report(l, c, tok, p, p.grant.retLine.index < c.invLine.index)
		return nil
	}
	if f.others == nil {
		f.others = map[string]*fenceRef{}
	}
	f.others[k] = mk()
	return nil
}

// report records a new grant c of tok that is not greater than (or, for a
// token without order, equal to) p's: granted before c was invoked
// (before), or while c was in flight.
func (f *fenceSt) report(l *lockSt, c *call, tok tokVal, p *fenceRef, before bool) {
	e := l.e
	e.nFence++
	var rel, why string
	switch {
	case tok.number() && cmpNumbers(tok, p.tok) < 0:
		rel, why = "lower than", "the tokens order these two holders against their grants"
	case p.grant.proc == c.proc:
		rel, why = "equal to", "the process released the lock in between, so this is a new grant with the token of an earlier one, and the resource cannot tell the two apart"
	default:
		rel, why = "equal to", "two grants with one token, so the resource cannot tell their holders apart"
	}
	when := "before it was invoked"
	if !before {
		when = "while this acquire was in flight"
	}
	e.fencing.add(Anomaly{Kind: KindTokenOrder, Check: CheckFencing, Lock: l.name, Processes: []int{c.proc, p.grant.proc},
		Start: min(p.grant.inv, c.inv), End: c.ret,
		Message: fmt.Sprintf("lock %q granted process %d token %s (acquire invoked at %s, returned at %s), %s token %s granted to process %d at %s, %s: %s",
			l.name, c.proc, tok, fmtTime(c.inv), fmtTime(c.ret), rel, p.tok, p.grant.proc, fmtTime(p.grant.ret), when, why),
		Ops: opsOf(p.grant, c)}, e.cfg.maxReports, e.fenceKinds)
}

// unordered reports, once per lock, a lock whose grants carry numbers and
// tokens of another kind: first and then are the first grant of each.
func (f *fenceSt) unordered(l *lockSt, first, then *fenceRef) {
	if first == nil {
		return
	}
	e := l.e
	e.nUnordered++
	if len(e.fencing.findings) >= e.cfg.maxReports*10 {
		return
	}
	e.fencing.findings = append(e.fencing.findings, Anomaly{Kind: KindTokensUnordered, Check: CheckFencing, Lock: l.name,
		Processes: []int{first.grant.proc, then.grant.proc}, Start: first.grant.inv, End: then.grant.ret,
		Message: fmt.Sprintf("lock %q granted process %d token %s (%s) at %s and process %d token %s (%s) at %s: the checker cannot order tokens of different kinds, so the tokens of this lock are judged among their own kind only",
			l.name, first.grant.proc, first.tok, first.tok.kindName(), fmtTime(first.grant.ret),
			then.grant.proc, then.tok, then.tok.kindName(), fmtTime(then.grant.ret)),
		Ops: opsOf(first.grant, then.grant)})
}

// wrote records an acknowledged write a by the holder of h.
func (f *fenceSt) wrote(h *holdRec, a *call) {
	if f.newest == nil || h.grant.inv > f.newest.grantInv {
		f.newest = &fenceRef{tok: h.token, grantInv: h.grant.inv, grant: h.grant, write: a}
	}
	if h.token.number() && (f.token == nil || cmpNumbers(h.token, f.token.tok) > 0) {
		f.token = &fenceRef{tok: h.token, grantInv: h.grant.inv, grant: h.grant, write: a}
	}
}

// forget keeps the token of a hold its process forgets before releasing it
// (procSt.remember): its next acquire returning that token is re-entrant.
func (f *fenceSt) forget(h *holdRec) {
	if h.released || !h.token.has() {
		return
	}
	if f.forgotten == nil {
		f.forgotten = map[int]forgotTok{}
	}
	f.forgotten[h.Process] = forgotTok{tok: h.token, grant: h.grant}
}

func (e *engine) finishFencing() {
	out := &e.fencing.result
	var noTok string
	if e.nNoToken > 0 {
		noTok = fmt.Sprintf("; %d grants carried no token (judged by grant order at the resource only)", e.nNoToken)
	}
	switch {
	case !e.fenced:
		out.Skipped = true
		out.Detail = "the promise is not fenced: tokens are not judged"
		e.fencing.anomalies, e.fencing.findings, e.fencing.omitted = nil, nil, 0
	case e.nFence > 0:
		out.Verdict = Invalid
		out.Detail = fmt.Sprintf("%d grants whose token was not greater than (or, without an order, different from) a token granted before it or alongside it%s", e.nFence, noTok)
	case e.nUnordered > 0:
		out.Verdict = Unknown
		out.Detail = fmt.Sprintf("%d locks whose tokens mix numbers with other kinds, which the checker cannot order against each other (tokens-unordered findings); within each kind, every new grant's token was greater (numbers) or new (other kinds)%s", e.nUnordered, noTok)
	default:
		out.Detail = "every new grant's token greater than the number tokens granted before it, and different from every other token granted before it or alongside it" + noTok
	}
}
