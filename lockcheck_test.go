package lockcheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/spec"
	"github.com/lockcheck/lockcheck/workload"
)

type nopLock struct{ keyspace string }

func (nopLock) Acquire(context.Context, string, string) (workload.Grant, error) {
	return workload.Grant{}, nil
}
func (nopLock) Release(context.Context, workload.Grant) error { return nil }

func newNop(c Client) (workload.Lock, error) {
	if c.Clock == nil {
		return nil, errors.New("no clock")
	}
	return nopLock{c.Keyspace}, nil
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
		{"no constructor", Lock{}, nil, "give one of Lock.New", nil},
		{"bad name", Lock{Name: "My Lock", New: newNop}, nil, "bad name", nil},
		{"bad promise", Lock{New: newNop, Promise: "exclusive"}, nil, "unknown promise", nil},
		{"bad fault", Lock{New: newNop}, []Option{WithNemesis("gc")}, `unknown fault "gc"`, nil},
		{"bad clients", Lock{New: newNop}, []Option{WithClients(-1)}, "clients must be", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPlan(tt.lock, tt.opts...)
			tc, cl := p.Test, p.Cluster
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

// The user's constructor gets the run's keyspace, the client's clock, the
// TTL of WithTTL (the one the meta line records) and the run's logger.
func TestEntryPassesClientSettings(t *testing.T) {
	var got Client
	e, err := Lock{New: func(c Client) (workload.Lock, error) { got = c; return newNop(c) }}.entry()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	l, err := e.New(nil, recipe.WithKeyspace("ks1"), recipe.WithClock(&workload.SkewClock{}), recipe.WithTTL(7*time.Second), recipe.WithLogger(log))
	if err != nil || l.(nopLock).keyspace != "ks1" {
		t.Fatalf("lock %+v, %v", l, err)
	}
	if got.TTL != 7*time.Second || got.Log != log || got.Keyspace != "ks1" {
		t.Errorf("constructor got %+v", got)
	}
	if err := e.Schema(context.Background(), nil, "ks1"); err != nil {
		t.Fatalf("a lock without schema: %v", err)
	}
}

// Everything `lockcheck run` can ask for, the API can: each option reaches
// the plan Run runs.
func TestPlanExpressesTheCLI(t *testing.T) {
	t.Setenv("LOCKCHECK_CLUSTER", "")
	hosts := Hosts{Hosts: []string{"192.0.2.1"}, Keyspace: "ks", SSH: &SSH{User: "u", KeyFile: "k"}}
	tests := []struct {
		name  string
		lock  Lock
		opts  []Option
		check func(Plan) bool
	}{
		{"recipe by name", Lock{Recipe: "lease-fenced"}, nil, func(p Plan) bool {
			return p.Test.Recipe.Name == "lease-fenced" && p.Test.Recipe.Promise == Fenced
		}},
		{"plug-in command", Lock{Command: "plugins/python-lease/run", Promise: Fenced}, nil, func(p Plan) bool {
			return p.Test.Recipe.Name == "python-lease" && p.Test.Recipe.Promise == Fenced && p.Test.Recipe.Setup != nil
		}},
		{"plug-in named", Lock{Name: "pylease", Command: "x"}, nil, func(p Plan) bool { return p.Test.Recipe.Name == "pylease" }},
		{"lock service", Lock{URL: "http://127.0.0.1:8080"}, nil, func(p Plan) bool {
			return p.Test.Recipe.Name == "http" && p.Test.Recipe.Promise == Mutex && p.url == "http://127.0.0.1:8080"
		}},
		{"pins", Lock{Recipe: "lease"}, []Option{WithPinClients(), WithNemesis("coord-partition")}, func(p Plan) bool {
			return p.Test.PinClients && strings.Join(p.Test.Nemesis, ",") == "coord-partition"
		}},
		{"ttl and pause extra", Lock{New: newNop}, []Option{WithTTL(9 * time.Second), WithPauseExtra(2 * time.Second)}, func(p Plan) bool {
			return p.Test.TTL == 9*time.Second && p.Test.PauseExtra == 2*time.Second
		}},
		{"hosts and ssh", Lock{New: newNop}, []Option{WithHosts(hosts)}, func(p Plan) bool {
			return p.Hosts != nil && p.Hosts.Hosts[0] == "192.0.2.1" && p.Hosts.SSH.User == "u" && p.Start == nil
		}},
		{"cluster shape", Lock{New: newNop}, []Option{WithCluster("c2"), WithStartIfMissing(1, "v1"), WithKeep()}, func(p Plan) bool {
			return p.Cluster == "c2" && p.Start != nil && *p.Start == ClusterShape{Nodes: 1, Paxos: "v1", Version: cluster.DefaultVersion} && p.Keep
		}},
		{"attach only by default", Lock{New: newNop}, nil, func(p Plan) bool { return p.Start == nil && !p.Keep }},
		{"workload", Lock{New: newNop}, []Option{WithWorkload("leader")}, func(p Plan) bool { return p.Test.Workload == "leader" }},
		{"no faults", Lock{New: newNop}, []Option{WithNemesis("none")}, func(p Plan) bool { return len(p.Test.Nemesis) == 0 }},
		{"a whole spec, then one setting", Lock{Recipe: "lease"}, []Option{WithSpec(func() Spec {
			s := spec.Defaults()
			s.Clients, s.Nemesis, s.SkewMin, s.SkewMax = 3, []string{"client-clock"}, time.Second, 2*time.Second
			return s
		}()), WithClients(4)}, func(p Plan) bool {
			return p.Test.Clients == 4 && p.Test.SkewMax == 2*time.Second && strings.Join(p.Test.Nemesis, ",") == "client-clock"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPlan(tt.lock, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(p) {
				t.Errorf("plan %+v", p)
			}
		})
	}
}

// What the API cannot run is refused before anything touches the network.
func TestPlanRefuses(t *testing.T) {
	tests := []struct {
		name string
		lock Lock
		opts []Option
		want string
	}{
		{"two locks", Lock{Recipe: "lease", Command: "x"}, nil, "not 2"},
		{"unknown recipe", Lock{Recipe: "nope"}, nil, `unknown lock "nope"`},
		{"bad url", Lock{URL: "localhost:8080"}, nil, "--lock-url: httplock"},
		{"bad promise", Lock{Command: "x", Promise: "linear"}, nil, "--promise must be mutex or fenced"},
		{"aimed without pins", Lock{Recipe: "lease"}, []Option{WithNemesis("coord-clock")}, "needs --pin-clients"},
		{"short ttl", Lock{New: newNop}, []Option{WithTTL(time.Millisecond)}, "--ttl must be at least 1s"},
		{"a spec without clients", Lock{New: newNop}, []Option{WithSpec(Spec{Time: time.Second})}, "--clients must be 1..100, got 0"},
		{"too many nodes", Lock{New: newNop}, []Option{WithStartIfMissing(9, "v2")}, "--nodes must be 1..5"},
		{"bad paxos", Lock{New: newNop}, []Option{WithStartIfMissing(3, "v3")}, `paxos "v3": want one of v1,`},
		{"register with a lock", Lock{Recipe: "lease"}, []Option{WithWorkload("register")}, "the register workload tests Cassandra's LWT itself: give no lock"},
		{"bad hosts", Lock{New: newNop}, []Option{WithHosts(Hosts{Hosts: []string{"a b"}, Keyspace: "ks"})}, "not a host name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewPlan(tt.lock, tt.opts...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want %q", err, tt.want)
			}
		})
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

// TestPlanRegister: the register workload takes the zero Lock and runs the
// register, no recipe.
func TestPlanRegister(t *testing.T) {
	p, err := NewPlan(Lock{}, WithWorkload("register"), WithNemesis("partition"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Test.Recipe.Name != "register" || p.Test.Recipe.Setup != nil || p.Test.Workload != "register" {
		t.Errorf("plan %+v", p.Test.Recipe)
	}
}

// A program using the Go API links no scenario table or measured rates
// (package scenario, and package matrix that runs its rows): they are the
// project's own tests, not the API's.
func TestAPILinksNoScenarios(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the dependencies with")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for dep := range strings.SplitSeq(string(out), "\n") {
		if dep == "github.com/lockcheck/lockcheck/scenario" || dep == "github.com/lockcheck/lockcheck/matrix" {
			t.Errorf("the root package links %s", dep)
		}
	}
}
