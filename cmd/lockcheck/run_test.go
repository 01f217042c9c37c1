package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
)

// Bad input to `lockcheck run` is refused with one clear line and exit 2
// before anything touches Docker.
func TestRunRejectsBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "--lock (one of"},
		{[]string{"--lock", "lease", "--lock-cmd", "plugins/python-lease/run"}, "give one of --lock, --lock-cmd and --lock-url, not 2"},
		{[]string{"--lock-cmd", "x", "--lock-url", "http://127.0.0.1:1"}, "not 2"},
		{[]string{"--lock", "lease", "--name", "mine"}, "--name names a --lock-cmd or --lock-url lock"},
		{[]string{"--lock-cmd", "x", "--name", "My Lock"}, "bad name"},
		{[]string{"--lock-url", "localhost:8080"}, "--lock-url: httplock: \"localhost:8080\": want http://HOST:PORT"},
		{[]string{"--lock-url", closedPort(t)}, "does not answer"},
		{[]string{"--lock-cmd", "x", "--promise", "linear"}, "--promise must be mutex or fenced"},
		{[]string{"--lock", "lease", "--promise", "linear"}, "--promise must be mutex or fenced"},
		{[]string{"--lock", "lease", "--version", "4.0", "--paxos", "v2"}, "Cassandra 4.0 has only v1"},
		{[]string{"--lock", "lease", "--version", "3.11"}, `version "3.11": want a release line`},
		{[]string{"--lock", "lease", "--version", "4.1.4"}, `or a pinned release, 4.1.5, 4.1.6`},
		{[]string{"--lock", "nope"}, `unknown lock "nope"`},
		{[]string{"--lock", "lease", "--nemesis", "partition,gc"}, `unknown fault "gc"`},
		{[]string{"--lock", "lease", "--nodes", "6"}, "--nodes must be 1..5"},
		{[]string{"--lock", "lease", "--clients", "0"}, "clients must be 1..100"},
		{[]string{"--lock", "lease", "--time", "-1s"}, "time must be positive"},
		{[]string{"--lock", "lease", "--ttl", "500ms"}, "ttl must be at least 1s"},
		{[]string{"--lock", "lease", "--workload", "elect"}, `workload must be one of [cycle leader register], got "elect"`},
		{[]string{"--lock", "lease", "--quiet", "-1s"}, "--quiet must not be negative"},
		{[]string{"--lock", "lease", "--paxos", "v3"}, `paxos "v3": want one of v1,`},
		{[]string{"--lock", "lease", "extra"}, `unexpected argument "extra"`},
		{[]string{"--workload", "register", "--lock", "lease"}, "--workload register tests Cassandra's LWT itself: give no --lock"},
		{[]string{"--workload", "register", "--nemesis", "client-pause"}, "nemesis client-pause acts on a lock's clients: the register workload takes the node faults"},
		{[]string{"--workload", "register", "--version", "4.0", "--paxos", "v2_without_linearizable_reads"}, "Cassandra 4.0 has only v1, v1_without_linearizable_reads"},
		{[]string{"--lock", "lease", "--hosts", "192.0.2.1", "--nemesis", "client-pause,kill"}, "--nemesis kill: node faults on --hosts need node access"},
		{[]string{"--lock", "lease", "--hosts", "192.0.2.1", "--keyspace", "a-b"}, `--keyspace "a-b": want a plain CQL identifier`},
		{[]string{"--lock", "lease", "--hosts", "192.0.2.1", "--nemesis", "pause", "--ssh-key", "/nonexistent/id"}, "--ssh-key: open /nonexistent/id"},
		{[]string{"--lock", "lease", "--hosts", "192.0.2.1", "--nemesis", "pause", "--ssh-key", "../../sshnode/testdata/id.pub", "--ssh-insecure-ignore-host-key"}, "ssh: no key found"},
		{[]string{"--lock", "lease", "--hosts", "127.0.0.1", "--nemesis", "pause", "--ssh-key", "../../sshnode/testdata/id", "--ssh-insecure-ignore-host-key", "--ssh-port", closedTCPPort(t)}, "connection refused"},
		{[]string{"--bogus"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		var out, errb strings.Builder
		code := runRun(context.Background(), tt.args, &out, &errb)
		if code != exitError {
			t.Errorf("%v: exit %d, want %d", tt.args, code, exitError)
		}
		if !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: stderr %q lacks %q", tt.args, errb.String(), tt.want)
		}
		if n := strings.Count(errb.String(), "\n"); n != 1 && !strings.Contains(tt.want, "flag provided") {
			t.Errorf("%v: %d lines on stderr, want one: %q", tt.args, n, errb.String())
		}
	}
}

// closedTCPPort is a local port where nothing listens any more.
func closedTCPPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// closedPort is a URL where nothing listens any more.
func closedPort(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

// Every flag of `lockcheck run` reaches the run's configuration through the
// Go API's options (lockcheck.NewPlan), the one way in both share.
func TestRunFlagsReachThePlan(t *testing.T) {
	t.Setenv("LOCKCHECK_CLUSTER", "")
	tests := []struct {
		args  []string
		check func(lockcheck.Plan) bool
	}{
		{[]string{"--lock", "lease-fenced"}, func(p lockcheck.Plan) bool {
			return p.Test.Recipe.Name == "lease-fenced" && p.Test.Recipe.Promise == lockcheck.Fenced && p.Cluster == "lockcheck" &&
				*p.Start == lockcheck.ClusterShape{Nodes: cluster.DefaultNodes, Paxos: cluster.DefaultPaxos, Version: cluster.DefaultVersion} && !p.Keep && p.Hosts == nil && p.Test.Seed != 0
		}},
		{[]string{"--lock-cmd", "plugins/python-lease/run", "--promise", "fenced"}, func(p lockcheck.Plan) bool {
			return p.Test.Recipe.Name == "python-lease" && p.Test.Recipe.Promise == lockcheck.Fenced
		}},
		{[]string{"--lock-cmd", "plugins/java-lease/run", "--name", "jlease", "--nemesis", "client-pause"}, func(p lockcheck.Plan) bool {
			return p.Test.Recipe.Name == "jlease"
		}},
		{[]string{"--lock-url", "http://127.0.0.1:8081"}, func(p lockcheck.Plan) bool {
			return p.Test.Recipe.Name == "http" && p.Test.Recipe.Promise == lockcheck.Mutex
		}},
		{[]string{"--lock", "lease", "--ttl", "7s"}, func(p lockcheck.Plan) bool { return p.Test.TTL == 7*time.Second }},
		{[]string{"--lock", "lease", "--pin-clients", "--nemesis", "coord-clock"}, func(p lockcheck.Plan) bool {
			return p.Test.PinClients && strings.Join(p.Test.Nemesis, ",") == "coord-clock"
		}},
		{[]string{"--lock", "music-seq", "--retire-stuck"}, func(p lockcheck.Plan) bool { return p.Test.RetireStuck }},
		{[]string{"--lock", "music-seq"}, func(p lockcheck.Plan) bool { return !p.Test.RetireStuck }},
		{[]string{"--lock", "lease", "--nemesis", "pause,client-pause"}, func(p lockcheck.Plan) bool {
			return strings.Join(p.Test.Nemesis, ",") == "pause,client-pause"
		}},
		{[]string{"--lock", "lease", "--pause-extra", "3s", "--interval", "2s", "--quiet", "0s"}, func(p lockcheck.Plan) bool {
			return p.Test.PauseExtra == 3*time.Second && p.Test.Interval == 2*time.Second && p.Test.Quiet == 0
		}},
		{[]string{"--lock", "lease", "--workload", "leader", "--clients", "7", "--locks", "2", "--time", "9s", "--seed", "42", "--store", "s"},
			func(p lockcheck.Plan) bool {
				tc := p.Test
				return tc.Workload == "leader" && tc.Clients == 7 && tc.Locks == 2 && tc.Time == 9*time.Second && tc.Seed == 42 && tc.Store == "s"
			}},
		{[]string{"--lock", "lease", "--cluster", "c2", "--nodes", "1", "--paxos", "v1", "--keep"}, func(p lockcheck.Plan) bool {
			return p.Cluster == "c2" && *p.Start == lockcheck.ClusterShape{Nodes: 1, Paxos: "v1", Version: cluster.DefaultVersion} && p.Keep
		}},
		{[]string{"--lock", "lease", "--version", "4.1", "--paxos", "v2"}, func(p lockcheck.Plan) bool {
			return *p.Start == lockcheck.ClusterShape{Nodes: cluster.DefaultNodes, Paxos: "v2", Version: "4.1"}
		}},
		{[]string{"--workload", "register", "--locks", "2", "--nemesis", "partition,pause", "--version", "4.1", "--paxos", "v2_without_linearizable_reads_or_rejected_writes"},
			func(p lockcheck.Plan) bool {
				return p.Test.Recipe.Name == "register" && p.Test.Workload == "register" && p.Test.Locks == 2 &&
					*p.Start == lockcheck.ClusterShape{Nodes: cluster.DefaultNodes, Paxos: "v2_without_linearizable_reads_or_rejected_writes", Version: "4.1"}
			}},
		{[]string{"--lock", "lease", "--hosts", "192.0.2.1, 192.0.2.2", "--port", "9043", "--keyspace", "ks", "--rf", "2", "--dc", "dc1"},
			func(p lockcheck.Plan) bool {
				x := p.Hosts
				return x != nil && strings.Join(x.Hosts, ",") == "192.0.2.1,192.0.2.2" && x.Port == 9043 && x.Keyspace == "ks" &&
					x.RF == 2 && x.DC == "dc1" && x.SSH == nil
			}},
		{[]string{"--lock", "lease", "--hosts", "h1", "--ssh-key", "k", "--ssh-user", "u", "--ssh-port", "2222", "--ssh-known-hosts", "kh",
			"--ssh-insecure-ignore-host-key", "--ssh-start-cmd", "start", "--ssh-clock-step"}, func(p lockcheck.Plan) bool {
			s := p.Hosts.SSH
			return s != nil && s.KeyFile == "k" && s.User == "u" && s.Port == 2222 && s.KnownHosts == "kh" && s.InsecureIgnoreHostKey &&
				s.StartCmd == "start" && s.ClockStep
		}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs, f := newRunFlags()
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			lock, opts, err := f.options()
			if p := mustPlan(t, lock, opts, err); !tt.check(p) {
				t.Errorf("plan %+v, hosts %+v", p, p.Hosts)
			}
		})
	}
}

// mustPlan is the plan of a command's lock and options, which must hold.
func mustPlan(t *testing.T, lock lockcheck.Lock, opts []lockcheck.Option, err error) lockcheck.Plan {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	p, err := lockcheck.NewPlan(lock, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunSaysAStuckLock(t *testing.T) {
	stuck := checker.Anomaly{Kind: checker.KindStuckLock, Lock: "l0", Start: 37_240_000_000, End: 190e9}
	res := lockcheck.Result{Verdict: checker.Valid, Report: "r.html",
		Check: checker.Result{Verdict: checker.Valid, Meta: &history.Meta{}, Findings: []checker.Anomaly{stuck}}}
	said := func() string {
		var stdout, stderr bytes.Buffer
		if code := printResult(context.Background(), res, nil, &stdout, &stderr); code != exitValid {
			t.Fatalf("exit %d, want %d", code, exitValid)
		}
		return stderr.String()
	}
	if out := said(); !strings.Contains(out, "lock l0 held for good from 37.2s") {
		t.Errorf("stderr %q lacks the stuck lock", out)
	}
	// With --retire-stuck the clients moved on: nothing to say.
	res.Check.Meta.Config = map[string]string{history.ConfigRetireStuck: "true"}
	if out := said(); strings.Contains(out, "held for good") {
		t.Errorf("stderr %q names a lock the clients moved off", out)
	}
}
