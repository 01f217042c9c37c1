package lockcheck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/workload"
)

type nopLock struct{ keyspace string }

func (nopLock) Acquire(context.Context, string, string) (workload.Grant, error) {
	return workload.Grant{}, nil
}
func (nopLock) Release(context.Context, workload.Grant) error { return nil }

func newNop(s *gocql.Session, keyspace string, clock workload.Clock) (workload.Lock, error) {
	if clock == nil {
		return nil, errors.New("no clock")
	}
	return nopLock{keyspace}, nil
}

func TestNewTest(t *testing.T) {
	t.Setenv("LOCKCHECK_CLUSTER", "")
	tests := []struct {
		name    string
		lock    Lock
		opts    []Option
		wantErr string
		check   func(runner.Test, string) string
	}{
		{"defaults", Lock{New: newNop}, nil, "", func(tc runner.Test, cl string) string {
			d := runner.Defaults()
			if tc.Recipe.Name != "mine" || tc.Recipe.Promise != Mutex || cl != "lockcheck" || tc.Seed == 0 ||
				tc.Clients != d.Clients || tc.Time != d.Time || len(tc.Nemesis) != 0 {
				return fmt.Sprintf("%+v on %s", tc, cl)
			}
			return ""
		}},
		{"options", Lock{Name: "my-lock", New: newNop, Promise: Fenced},
			[]Option{WithNemesis("client-pause", "client-clock"), WithTime(20 * time.Second), WithClients(3),
				WithLocks(2), WithSeed(7), WithCluster("lc"), WithQuiet(0), WithInterval(time.Second), WithStore("s")},
			"", func(tc runner.Test, cl string) string {
				if tc.Recipe.Name != "my-lock" || tc.Recipe.Promise != Fenced || cl != "lc" || tc.Seed != 7 ||
					tc.Clients != 3 || tc.Locks != 2 || tc.Time != 20*time.Second || tc.Quiet != 0 ||
					tc.Interval != time.Second || tc.Store != "s" || strings.Join(tc.Nemesis, ",") != "client-pause,client-clock" {
					return fmt.Sprintf("%+v on %s", tc, cl)
				}
				return ""
			}},
		{"all faults", Lock{New: newNop}, []Option{WithNemesis("all")}, "", func(tc runner.Test, _ string) string {
			if len(tc.Nemesis) < 6 {
				return fmt.Sprint(tc.Nemesis)
			}
			return ""
		}},
		{"no constructor", Lock{}, nil, "Lock.New is required", nil},
		{"bad name", Lock{Name: "My Lock", New: newNop}, nil, "bad name", nil},
		{"bad promise", Lock{New: newNop, Promise: "exclusive"}, nil, "unknown promise", nil},
		{"bad fault", Lock{New: newNop}, []Option{WithNemesis("gc")}, `unknown fault "gc"`, nil},
		{"bad clients", Lock{New: newNop}, []Option{WithClients(-1)}, "clients must be", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc, cl, err := newTest(tt.lock, tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(tc, cl); msg != "" {
				t.Error(msg)
			}
		})
	}
}

// The user's constructor gets the run's keyspace and the client's clock.
func TestEntryPassesKeyspaceAndClock(t *testing.T) {
	e, err := Lock{New: newNop}.entry()
	if err != nil {
		t.Fatal(err)
	}
	l, err := e.New(nil, recipe.WithKeyspace("ks1"), recipe.WithClock(&workload.SkewClock{}))
	if err != nil || l.(nopLock).keyspace != "ks1" {
		t.Fatalf("lock %+v, %v", l, err)
	}
	if err := e.Schema(context.Background(), nil, "ks1"); err != nil {
		t.Fatalf("a lock without schema: %v", err)
	}
}

// fakeT records what judge does to a test.
type fakeT struct {
	testing.TB
	mu             sync.Mutex
	logs, errs     []string
	failed, fatals bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Logf(format string, a ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, fmt.Sprintf(format, a...))
}
func (f *fakeT) Errorf(format string, a ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = true
	f.errs = append(f.errs, fmt.Sprintf(format, a...))
}
func (f *fakeT) Fatalf(format string, a ...any) {
	f.Errorf(format, a...)
	f.fatals = true
}

func TestJudge(t *testing.T) {
	invalid := Result{Verdict: Invalid, Report: "/s/r/report.html",
		Check: checker.Result{Anomalies: []checker.Anomaly{{Kind: "overlap", Lock: "l0", Message: "two holders"}}}}
	tests := []struct {
		name     string
		res      Result
		err      error
		fail     bool
		wantText string
	}{
		{"valid", Result{Verdict: Valid, Report: "/s/r/report.html"}, nil, false, "/s/r/report.html"},
		{"invalid", invalid, nil, true, "two holders"},
		{"unknown", Result{Verdict: Unknown, Report: "/s/r/report.html"}, nil, true, "could not decide"},
		{"broken run", Result{}, errors.New("lockcheck: start the cluster first"), true, "start the cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeT{}
			judge(f, tt.res, tt.err)
			if f.failed != tt.fail {
				t.Errorf("failed = %v, want %v (%v)", f.failed, tt.fail, f.errs)
			}
			all := strings.Join(append(f.logs, f.errs...), "\n")
			if !strings.Contains(all, tt.wantText) {
				t.Errorf("output %q lacks %q", all, tt.wantText)
			}
			if tt.res.Report != "" && !strings.Contains(strings.Join(f.logs, "\n"), tt.res.Report) {
				t.Errorf("report path not logged: %v", f.logs)
			}
		})
	}
}

// WithHosts runs on the user's cluster: a node fault with no SSH is refused
// before any connection is made.
func TestWithHostsRefusesNodeFaultsWithoutSSH(t *testing.T) {
	_, err := Run(context.Background(), Lock{New: newNop}, WithHosts(Hosts{Hosts: []string{"192.0.2.1"}, Keyspace: "ks"}),
		WithNemesis("pause"), WithStore(t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "node faults on --hosts need node access") {
		t.Errorf("got %v", err)
	}
}
