package workload

import (
	"context"
	"errors"
	"fmt"
	"net"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// Outcome is what an error from Cassandra says about the request that got it.
type Outcome int

const (
	// Failed: the request certainly had no effect (history type fail).
	Failed Outcome = iota
	// Unknown: the request may have taken effect, now or later (history
	// type info). A write that is unknown must never be retried blindly.
	Unknown
)

func (o Outcome) String() string {
	if o == Unknown {
		return "unknown"
	}
	return "failed"
}

// ErrorRule is one row of the classification table: which gocql error it
// matches, what it means, and why.
type ErrorRule struct {
	Error   string // the gocql error as a reader recognises it
	Outcome Outcome
	Why     string
	match   func(error) bool
}

func isType[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// ErrorTable is the classification Classify applies, first match wins. It is
// the table of docs/troubleshooting.md ("Which errors mean failed and which unknown"). An error that matches no
// row is Unknown: calling a failure unknown costs a checker precision,
// calling an unknown failure makes it wrong.
var ErrorTable = []ErrorRule{
	{"RequestErrWriteTimeout (WriteType CAS)", Unknown,
		"a Paxos round timed out after it may have reached acceptors; it can still be completed by the next round on the partition",
		func(err error) bool {
			var e *gocql.RequestErrWriteTimeout
			return errors.As(err, &e) && e.WriteType == "CAS"
		}},
	{"RequestErrWriteTimeout (other WriteType)", Unknown,
		"some replicas may have applied the write; read repair or hints can spread it later", isType[*gocql.RequestErrWriteTimeout]},
	{"RequestErrCASWriteUnknown", Unknown,
		"the coordinator itself says the CAS outcome is unknown (Paxos v2)", isType[*gocql.RequestErrCASWriteUnknown]},
	{"RequestErrWriteFailure", Unknown,
		"some replicas failed, others may have applied the write", isType[*gocql.RequestErrWriteFailure]},
	{"ErrTimeoutNoResponse (client timeout)", Unknown,
		"the request was sent and no answer came back in time", func(err error) bool { return errors.Is(err, gocql.ErrTimeoutNoResponse) }},
	{"context deadline exceeded / canceled", Unknown,
		"the caller gave up while the request may have been in flight", func(err error) bool {
			return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
		}},
	{"ErrConnectionClosed (connection lost mid-request)", Unknown,
		"the connection died after the request was written", func(err error) bool { return errors.Is(err, gocql.ErrConnectionClosed) }},
	{"net.Error (timeout, reset)", Unknown,
		"a network error mid-request: the request may have arrived", isType[net.Error]},
	{"RequestErrUnavailable", Failed,
		"the coordinator saw too few live replicas and did not start the write or the Paxos round", isType[*gocql.RequestErrUnavailable]},
	{"RequestErrReadTimeout (incl. SERIAL)", Failed,
		"a read has no effect; a SERIAL read that times out returned nothing and wrote nothing of ours", isType[*gocql.RequestErrReadTimeout]},
	{"RequestErrReadFailure", Failed, "a read has no effect", isType[*gocql.RequestErrReadFailure]},
	{"RequestErrOverloaded / Bootstrapping", Failed, "the coordinator refused the request before executing it", func(err error) bool {
		return isType[*gocql.RequestErrOverloaded](err) || isType[*gocql.RequestErrBootstrapping](err)
	}},
	{"RequestErrSyntax / Invalid / Unauthorized / Config / AlreadyExists / Unprepared / FunctionFailure", Failed,
		"the request was rejected before execution", func(err error) bool {
			return isType[*gocql.RequestErrSyntax](err) || isType[*gocql.RequestErrInvalid](err) ||
				isType[*gocql.RequestErrUnauthorized](err) || isType[*gocql.RequestErrConfig](err) ||
				isType[*gocql.RequestErrAlreadyExists](err) || isType[*gocql.RequestErrUnprepared](err) ||
				isType[*gocql.RequestErrFunctionFailure](err)
		}},
	{"ErrNoConnections / ErrSessionClosed / ErrNoStreams", Failed,
		"the driver had no connection to send the request on", func(err error) bool {
			return errors.Is(err, gocql.ErrNoConnections) || errors.Is(err, gocql.ErrSessionClosed) ||
				errors.Is(err, gocql.ErrNoStreams)
		}},
}

// ClassifyOutcome tells whether err from a Cassandra request means the
// request certainly failed or its outcome is unknown. Errors that already
// wrap ErrUnknown are Unknown; the other sentinels of this package are Failed.
func ClassifyOutcome(err error) Outcome {
	switch {
	case errors.Is(err, ErrUnknown):
		return Unknown
	case errors.Is(err, ErrNotAcquired), errors.Is(err, ErrHeldByOther), errors.Is(err, ErrNotHeld):
		return Failed
	}
	for _, r := range ErrorTable {
		if r.match(err) {
			return r.Outcome
		}
	}
	return Unknown
}

// Classify wraps err from a write (plain or LWT) so that errors.Is(err,
// ErrUnknown) tells an unknown outcome; a definite failure comes back as a
// plain wrapped error, never ErrUnknown. nil stays nil; errors that already
// wrap one of the sentinels come back unchanged.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrUnknown) || errors.Is(err, ErrNotAcquired) ||
		errors.Is(err, ErrHeldByOther) || errors.Is(err, ErrNotHeld) {
		return err
	}
	if ClassifyOutcome(err) == Unknown {
		return fmt.Errorf("%w: %w", ErrUnknown, err)
	}
	return fmt.Errorf("cassandra: %w", err)
}

// ClassifyLWT is Classify for a lightweight transaction. It differs in one
// row: Unavailable. Before the Paxos round starts the coordinator checks the
// replicas at the serial consistency (SERIAL, LOCAL_SERIAL) and nothing
// happened; but Paxos v1 checks them again at the commit consistency (QUORUM)
// after a quorum accepted the proposal, which the next round on the partition
// then completes. An Unavailable at any other consistency than a serial one is
// therefore an unknown outcome for an LWT.
func ClassifyLWT(err error) error {
	var u *gocql.RequestErrUnavailable
	if errors.As(err, &u) && u.Consistency != gocql.Serial && u.Consistency != gocql.LocalSerial &&
		!errors.Is(err, ErrUnknown) {
		return fmt.Errorf("%w: unavailable at commit, after the proposal: %w", ErrUnknown, err)
	}
	return Classify(err)
}

// ClassifyRead wraps err from a read. A read has no effect, so whatever went
// wrong it failed: the result never wraps ErrUnknown (unless err already did).
func ClassifyRead(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrUnknown) {
		return err
	}
	return fmt.Errorf("cassandra read: %w", err)
}

// LWT sets what every lightweight transaction of lockcheck needs: QUORUM
// commit, SERIAL conditions, not idempotent and no retry policy, because a
// driver retry of a Paxos round whose first attempt may have applied breaks
// linearizability (the retry can see its own write and report not applied).
func LWT(q *gocql.Query) *gocql.Query {
	return q.Consistency(gocql.Quorum).SerialConsistency(gocql.Serial).Idempotent(false).RetryPolicy(nil)
}

// LWTBatch is LWT for a conditional batch (one partition).
func LWTBatch(b *gocql.Batch) *gocql.Batch {
	return b.Consistency(gocql.Quorum).SerialConsistency(gocql.Serial).RetryPolicy(nil)
}
