package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Outcome
	}{
		{"cas write timeout", &gocql.RequestErrWriteTimeout{WriteType: "CAS"}, Unknown},
		{"simple write timeout", &gocql.RequestErrWriteTimeout{WriteType: "SIMPLE"}, Unknown},
		{"cas unknown", &gocql.RequestErrCASWriteUnknown{}, Unknown},
		{"write failure", &gocql.RequestErrWriteFailure{}, Unknown},
		{"client timeout", gocql.ErrTimeoutNoResponse, Unknown},
		{"deadline", context.DeadlineExceeded, Unknown},
		{"canceled, wrapped", fmt.Errorf("query: %w", context.Canceled), Unknown},
		{"connection closed", gocql.ErrConnectionClosed, Unknown},
		{"net error", &net.OpError{Op: "read", Err: io.ErrUnexpectedEOF}, Unknown},
		{"unrecognised", errors.New("something odd"), Unknown},
		{"unavailable", &gocql.RequestErrUnavailable{Consistency: gocql.Quorum, Required: 2, Alive: 1}, Failed},
		{"serial read timeout", &gocql.RequestErrReadTimeout{Consistency: gocql.Serial}, Failed},
		{"read failure", &gocql.RequestErrReadFailure{}, Failed},
		{"overloaded", &gocql.RequestErrOverloaded{}, Failed},
		{"syntax", &gocql.RequestErrSyntax{}, Failed},
		{"invalid", &gocql.RequestErrInvalid{}, Failed},
		{"no connections", gocql.ErrNoConnections, Failed},
		{"session closed", fmt.Errorf("x: %w", gocql.ErrSessionClosed), Failed},
		{"already unknown", fmt.Errorf("%w: because", ErrUnknown), Unknown},
		{"not held", fmt.Errorf("release: %w", ErrNotHeld), Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClassifyOutcome(tt.err); got != tt.want {
				t.Fatalf("ClassifyOutcome = %v, want %v", got, tt.want)
			}
			c := Classify(tt.err)
			if got := errors.Is(c, ErrUnknown); got != (tt.want == Unknown) {
				t.Fatalf("errors.Is(Classify(err), ErrUnknown) = %v for %v", got, tt.want)
			}
			if !errors.Is(c, tt.err) && !errors.Is(tt.err, c) {
				t.Fatalf("Classify lost the cause: %v", c)
			}
			if r := ClassifyRead(tt.err); errors.Is(r, ErrUnknown) != errors.Is(tt.err, ErrUnknown) {
				t.Fatalf("ClassifyRead(%v) = %v: a read is never unknown", tt.err, r)
			}
		})
	}
	if Classify(nil) != nil || ClassifyRead(nil) != nil {
		t.Fatal("nil must stay nil")
	}
}

// An LWT that gets Unavailable at its commit consistency (QUORUM) failed in
// Paxos v1's commit phase, after a quorum accepted the proposal: the write
// will be completed by the next round, so the outcome is unknown. Only an
// Unavailable at SERIAL/LOCAL_SERIAL (before the Paxos round started) is a
// definite failure.
func TestClassifyLWT(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Outcome
	}{
		{"unavailable at serial, before paxos", &gocql.RequestErrUnavailable{Consistency: gocql.Serial, Required: 2, Alive: 1}, Failed},
		{"unavailable at local serial", &gocql.RequestErrUnavailable{Consistency: gocql.LocalSerial, Required: 2, Alive: 1}, Failed},
		{"unavailable at commit (quorum)", &gocql.RequestErrUnavailable{Consistency: gocql.Quorum, Required: 2, Alive: 1}, Unknown},
		{"unavailable at commit, wrapped", fmt.Errorf("x: %w", &gocql.RequestErrUnavailable{Consistency: gocql.LocalQuorum}), Unknown},
		{"cas write timeout", &gocql.RequestErrWriteTimeout{WriteType: "CAS"}, Unknown},
		{"serial read timeout", &gocql.RequestErrReadTimeout{Consistency: gocql.Serial}, Failed},
		{"no connections", gocql.ErrNoConnections, Failed},
		{"client timeout", gocql.ErrTimeoutNoResponse, Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ClassifyLWT(tt.err)
			if got := errors.Is(c, ErrUnknown); got != (tt.want == Unknown) {
				t.Fatalf("errors.Is(ClassifyLWT(%v), ErrUnknown) = %v, want outcome %v", tt.err, got, tt.want)
			}
			if got := ClassifyOutcome(c); got != tt.want {
				t.Fatalf("ClassifyOutcome(ClassifyLWT(err)) = %v, want %v", got, tt.want)
			}
			if !errors.Is(c, tt.err) && !errors.Is(tt.err, c) {
				t.Fatalf("ClassifyLWT lost the cause: %v", c)
			}
		})
	}
	if ClassifyLWT(nil) != nil {
		t.Fatal("nil must stay nil")
	}
}
