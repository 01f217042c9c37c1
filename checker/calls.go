package checker

import (
	"math"

	"github.com/lockcheck/lockcheck/history"
)

// Never is the return time of an operation without completion, and the end
// of a hold or lease that does not expire.
const Never int64 = math.MaxInt64

// call is a client operation: its invocation paired with its completion.
type call struct {
	proc    int
	f       string
	lock    string
	typ     history.Type // ok, fail or info (info also for a missing completion)
	inv     int64        // invocation time
	ret     int64        // completion time; Never when there is none
	invIdx  int          // position of the invoke in ops
	retIdx  int          // position of the completion in ops; -1 when none
	leaseMS int64        // from the completion, else the invoke
}

// pairCalls pairs invocations with their completions, in invocation order.
// Invocations without a completion (a killed run) become info calls.
func pairCalls(ops []history.Op) []call {
	calls := make([]call, 0, len(ops)/2+1)
	open := make(map[int]int) // process -> position in calls
	for i := range ops {
		op := &ops[i]
		if op.Process < 0 {
			continue
		}
		if op.Type == history.Invoke {
			open[op.Process] = len(calls)
			calls = append(calls, call{
				proc: op.Process, f: op.F, lock: op.Lock, typ: history.Info,
				inv: op.Time, ret: Never, invIdx: i, retIdx: -1, leaseMS: op.LeaseMS,
			})
			continue
		}
		ci, ok := open[op.Process]
		if !ok {
			continue // refused by validation; Check validates first
		}
		delete(open, op.Process)
		c := &calls[ci]
		c.typ, c.ret, c.retIdx = op.Type, op.Time, i
		if op.LeaseMS > 0 {
			c.leaseMS = op.LeaseMS
		}
	}
	// An ok renew without lease_ms renews for the lease its process's
	// grant had, rather than forever.
	type pl struct {
		proc int
		lock string
	}
	lease := map[pl]int64{}
	for i := range calls {
		c := &calls[i]
		if c.typ != history.OK {
			continue
		}
		switch c.f {
		case history.FAcquire:
			lease[pl{c.proc, c.lock}] = c.leaseMS
		case history.FRenew:
			if c.leaseMS <= 0 {
				c.leaseMS = lease[pl{c.proc, c.lock}]
			}
		}
	}
	return calls
}

// expiry is when a grant made by an op invoked at inv with lease leaseMS
// stops being valid.
func expiry(inv, leaseMS int64) int64 {
	if leaseMS <= 0 || leaseMS >= (Never-inv)/1e6 {
		return Never // no lease, or one longer than time can count
	}
	return inv + leaseMS*1e6
}
