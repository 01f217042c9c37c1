package checker

import "github.com/lockcheck/lockcheck/history"

// pairCalls pairs invocations with their completions, in invocation order,
// for the reference checks of the tests. Invocations without a completion
// become info calls; an ok renew without lease_ms keeps its process's grant's
// lease.
type procLock struct {
	proc int
	lock string
}

func pairCalls(ops []history.Op) []call {
	var calls []call
	open := map[int]int{}
	grant := map[procLock]int64{}
	for _, op := range ops {
		if op.Process < 0 {
			continue
		}
		if op.Type == history.Invoke {
			open[op.Process] = len(calls)
			calls = append(calls, call{proc: op.Process, f: op.F, lock: op.Lock, typ: history.Info,
				inv: op.Time, ret: Never, leaseMS: op.LeaseMS, invLine: lineOf(op)})
			continue
		}
		ci, ok := open[op.Process]
		if !ok {
			continue
		}
		delete(open, op.Process)
		c := &calls[ci]
		c.typ, c.ret, c.retLine, c.done = op.Type, op.Time, lineOf(op), true
		if op.LeaseMS > 0 {
			c.leaseMS = op.LeaseMS
		}
		if c.typ == history.OK {
			pl := procLock{c.proc, c.lock}
			switch c.f {
			case history.FAcquire:
				grant[pl] = c.leaseMS
			case history.FRenew:
				if c.leaseMS <= 0 {
					c.leaseMS = grant[pl]
				}
			}
		}
	}
	return calls
}
