package recipe

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// fakeDDL answers each statement from a script of errors (nil once the
// script runs out) and records the calls in order.
type fakeDDL struct {
	errs  map[string][]error
	agree error
	calls []string
}

func (f *fakeDDL) exec(_ context.Context, stmt string) error {
	f.calls = append(f.calls, stmt)
	if e := f.errs[stmt]; len(e) > 0 {
		f.errs[stmt] = e[1:]
		return e[0]
	}
	return nil
}

func (f *fakeDDL) awaitAgreement(context.Context) error {
	f.calls = append(f.calls, "agree")
	return f.agree
}

func TestCreateTables(t *testing.T) {
	timeout, refused := gocql.ErrTimeoutNoResponse, errors.New("unauthorized")
	tests := []struct {
		name      string
		errs      map[string][]error
		agree     error
		wantCalls []string
		wantErr   string // "" for success
	}{
		{"every statement once, then agreement", nil, nil, []string{"a", "b", "agree"}, ""},
		{"a timeout is retried after agreement", map[string][]error{"a": {timeout, timeout}}, nil,
			[]string{"a", "agree", "a", "agree", "a", "b", "agree"}, ""},
		{"four timeouts give up", map[string][]error{"b": {timeout, timeout, timeout, timeout}}, nil,
			[]string{"a", "b", "agree", "b", "agree", "b", "agree", "b"}, "no response"},
		{"another error is not retried", map[string][]error{"a": {refused}}, nil, []string{"a"}, "unauthorized"},
		{"no agreement after a timeout ends it", map[string][]error{"a": {timeout}}, errors.New("schema versions differ"),
			[]string{"a", "agree"}, "schema versions differ"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeDDL{errs: tt.errs, agree: tt.agree}
			err := createTables(context.Background(), f, "test schema", []string{"a", "b"})
			if !slices.Equal(f.calls, tt.wantCalls) {
				t.Errorf("calls %v, want %v", f.calls, tt.wantCalls)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "test schema: ")):
				t.Fatalf("error %v, want one starting %q and mentioning %q", err, "test schema: ", tt.wantErr)
			}
		})
	}
}
