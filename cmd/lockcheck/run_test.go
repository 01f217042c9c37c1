package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
		{[]string{"--lock-url", "localhost:8080"}, "--lock-url: httplock: \"localhost:8080\": want http://HOST:PORT"},
		{[]string{"--lock-url", closedPort(t)}, "does not answer"},
		{[]string{"--lock-cmd", "x", "--promise", "linear"}, "--promise must be mutex or fenced"},
		{[]string{"--lock", "nope"}, `unknown lock "nope"`},
		{[]string{"--lock", "lease", "--nemesis", "partition,gc"}, `unknown fault "gc"`},
		{[]string{"--lock", "lease", "--nodes", "6"}, "--nodes must be 1..5"},
		{[]string{"--lock", "lease", "--clients", "0"}, "clients must be 1..100"},
		{[]string{"--lock", "lease", "--time", "-1s"}, "time must be positive"},
		{[]string{"--lock", "lease", "--ttl", "500ms"}, "ttl must be at least 1s"},
		{[]string{"--lock", "lease", "--workload", "elect"}, `workload must be one of [cycle leader], got "elect"`},
		{[]string{"--lock", "lease", "--quiet", "-1s"}, "quiet and pause-extra must not be negative"},
		{[]string{"--lock", "lease", "--paxos", "v3"}, "--paxos must be v1 or v2"},
		{[]string{"--lock", "lease", "extra"}, `unexpected argument "extra"`},
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
