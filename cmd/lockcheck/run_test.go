package main

import (
	"context"
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
		{nil, "--lock is required"},
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
	}
}
