package checker

import (
	"fmt"

	"github.com/lockcheck/lockcheck/history"
)

// The fencing rules (the fenced promise). Order is real-time grant order: a
// grant G2 is newer than G1 when G1's ok came before G2's invoke (grants
// whose calls overlap are not ordered).
//   - The lock: every grant's token is greater than every token granted
//     before it on that lock (token-not-increasing otherwise; the lock's
//     fault). A holder's own acquire that hands back the token it holds is
//     not a regression.
//   - The resource (resource.go, judge): a write by a holder whose grant is
//     older than the grant of a write the resource had acknowledged before
//     this write was invoked is a stale-holder write, whatever the tokens
//     say; so is a write with a lower token than one already acknowledged.
//
// Each needs only what the lock had seen when a call was invoked, so a call
// takes a snapshot at its invoke (three pointers) and the lock keeps only
// the current maxima: nothing grows with the history.

// fenceRef is a grant, or a write and the grant of its hold, that set one of
// the maxima. It is never changed once made, so that snapshots may share it.
type fenceRef struct {
	tok      int64
	hasTok   bool
	grantInv int64 // the grant's invocation: what grant order compares
	grant    *call
	write    *call // nil for a grant
}

// fenceSt is one lock's maxima.
type fenceSt struct {
	grant  *fenceRef // the grant with the greatest token
	newest *fenceRef // the acknowledged write whose hold's grant was invoked last
	token  *fenceRef // the acknowledged write with the greatest token
}

func (f *fenceSt) invoke(c *call) {
	switch c.f {
	case history.FAcquire:
		c.snapGrant = f.grant
	case history.FAdd:
		c.snapNewest, c.snapToken = f.newest, f.token
	}
}

// granted judges an ok acquire's token against the tokens granted before it
// was invoked. same: it re-grants its holder the token it holds.
func (f *fenceSt) granted(l *lockSt, c *call, tok int64, hasTok, same bool) {
	if !hasTok {
		return
	}
	if p := c.snapGrant; p != nil && (p.tok > tok || (p.tok == tok && !same)) {
		e := l.e
		e.nFence++
		rel := "equal to"
		if p.tok > tok {
			rel = "lower than"
		}
		e.fencing.add(Anomaly{Kind: KindTokenOrder, Check: CheckFencing, Lock: l.name, Processes: []int{c.proc, p.grant.proc},
			Start: p.grant.inv, End: c.ret,
			Message: fmt.Sprintf("lock %q granted process %d token %d (acquire invoked at %s), %s token %d granted to process %d at %s, before it: the lock's tokens did not grow, so fencing cannot order its holders",
				l.name, c.proc, tok, fmtTime(c.inv), rel, p.tok, p.grant.proc, fmtTime(p.grant.ret)),
			Ops: opsOf(p.grant, c)}, e.cfg.maxReports, e.fenceKinds)
	}
	if f.grant == nil || tok > f.grant.tok {
		f.grant = &fenceRef{tok: tok, hasTok: true, grantInv: c.inv, grant: c}
	}
}

// wrote records an acknowledged write a by the holder of h.
func (f *fenceSt) wrote(h *holdRec, a *call) {
	if f.newest == nil || h.grant.inv > f.newest.grantInv {
		f.newest = &fenceRef{tok: h.token, hasTok: h.hasToken, grantInv: h.grant.inv, grant: h.grant, write: a}
	}
	if h.hasToken && (f.token == nil || h.token > f.token.tok) {
		f.token = &fenceRef{tok: h.token, hasTok: true, grantInv: h.grant.inv, grant: h.grant, write: a}
	}
}

func (e *engine) finishFencing() {
	out := &e.fencing.result
	switch {
	case !e.fenced:
		out.Skipped = true
		out.Detail = "the promise is not fenced: tokens are not judged"
		e.fencing.anomalies, e.fencing.omitted = nil, 0
	case e.nFence > 0:
		out.Verdict = Invalid
		out.Detail = fmt.Sprintf("%d grants whose token did not grow", e.nFence)
	default:
		out.Detail = "every grant's token greater than those granted before it"
	}
}
