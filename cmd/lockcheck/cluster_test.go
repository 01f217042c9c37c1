package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input to `lockcheck cluster` gets one error line and exit code 2,
// before anything touches Docker (these run without one).
func TestClusterBadInput(t *testing.T) {
	key := filepath.Join(t.TempDir(), "id.pub")
	if err := os.WriteFile(key, []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string // in the error line
	}{
		{"no command", nil, "usage"},
		{"unknown command", []string{"sideways"}, `unknown command "sideways"`},
		{"unknown flag", []string{"up", "--frobnicate"}, "frobnicate"},
		{"zero nodes", []string{"up", "--nodes", "0"}, "nodes 0"},
		{"six nodes", []string{"up", "--nodes", "6"}, "nodes 6"},
		{"not a number", []string{"up", "--nodes", "three"}, "three"},
		{"paxos v3", []string{"up", "--paxos", "v3"}, "paxos"},
		{"unknown paxos state purging", []string{"up", "--paxos-state-purging", "never"}, "paxos state purging"},
		{"paxos state purging on 4.0", []string{"up", "--version", "4.0", "--paxos-state-purging", "repaired"}, "4.1 and later"},
		{"accord on 5.0", []string{"up", "--accord", "full"}, "has no Accord"},
		{"unknown accord mode", []string{"up", "--version", "6.0-alpha", "--accord", "fast"}, "want one of full, mixed_reads"},
		{"accord stop marker without accord", []string{"up", "--version", "6.0-alpha", "--accord-stop-marker", "REBOOTSTRAP"}, "an Accord setting"},
		{"unknown accord stop marker", []string{"up", "--version", "6.0-alpha", "--accord", "full", "--accord-stop-marker", "restart"}, "want one of EXIT, ALLOW_UNSAFE_STARTUP, REBOOTSTRAP"},
		{"unknown patch release", []string{"up", "--version", "4.1.4"}, "or a pinned release, 4.1.5, 4.1.6"},
		{"image of an unknown release", []string{"image", "--version", "4.1.4"}, "or a pinned release, 4.1.5, 4.1.6"},
		{"bad heap", []string{"up", "--heap", "lots"}, "heap"},
		{"rf above nodes", []string{"up", "--nodes", "2", "--rf", "3"}, "replication factor"},
		{"bad subnet", []string{"up", "--subnet", "10.0.0.0/30"}, "subnet"},
		{"negative timeout", []string{"up", "--timeout", "-1m"}, "--timeout must not be negative"},
		{"bad name", []string{"up", "--name", "Bad Name"}, "Bad Name"},
		{"bad name as --cluster", []string{"up", "--cluster", "Bad Name"}, "Bad Name"},
		{"stray argument", []string{"up", "now"}, `unexpected argument "now"`},
		{"status flag", []string{"status", "--nodes", "3"}, "nodes"},
		{"down stray", []string{"down", "all"}, `unexpected argument "all"`},
		{"lazyfs binary missing", []string{"up", "--lazyfs"}, "lazy filesystem binary"},
		{"lazyfs with ssh", []string{"up", "--lazyfs", "--ssh-authorized-key", key}, "not together"},
	}
	// --lazyfs finds its binary here first: a path that is not there.
	t.Setenv("LOCKCHECK_LAZYFS_BIN", "/nonexistent/lockcheck-lazyfs")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runCluster(context.Background(), tt.args, &stdout, &stderr)
			if code != exitError {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitError, stderr.String())
			}
			msg := stderr.String()
			if !strings.Contains(msg, tt.want) {
				t.Errorf("stderr %q does not mention %q", msg, tt.want)
			}
			if tt.args != nil && strings.Count(strings.TrimSpace(msg), "\n") != 0 {
				t.Errorf("stderr is not one line: %q", msg)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

func TestClusterHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runCluster(context.Background(), []string{"up", "-h"}, &stdout, &stderr); code != exitValid {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(stdout.String(), "--nodes") {
		t.Errorf("help does not list flags: %q", stdout.String())
	}
}
