//go:build jepsen

package sshnode_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/exclusive"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/sshnode"
)

// startCmd starts the JVM again in a node of cluster.WithSSHKey.
const startCmd = "/opt/lockcheck/bin/entrypoint.sh start"

// A Docker cluster with sshd in its nodes, used as a user's own cluster:
// the runs below know its contact points and SSH only (no Docker API), as
// `lockcheck run --hosts --ssh-*` does. Lease under client-pause is caught;
// lease-fenced under every node fault kind stays valid, as on the Docker
// path; no rule and no clock offset is left on any host. The cluster
// (<LOCKCHECK_CLUSTER>-ssh, 3 nodes) starts in about a minute; the two
// runs take 30 s and 45 s plus heal and quiet.
func TestHostsOverSSH(t *testing.T) {
	// One cluster of a test's own at a time beside the shared one (make
	// test's second stream starts its packages at once): the wait for the
	// turn comes before the test's own time starts.
	clustertest.OwnTurn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	dir := t.TempDir()
	keyFile, authorized := newKey(t, dir)
	name := os.Getenv("LOCKCHECK_CLUSTER")
	if name == "" {
		name = cluster.DefaultName
	}
	name += "-ssh"
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := cluster.Start(ctx, cluster.WithName(name), cluster.WithSSHKey(authorized), cluster.WithLogger(log))
	if err != nil {
		t.Fatalf("start cluster %s: %v", name, err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.Stop(sctx, ""); err != nil {
			t.Errorf("stop cluster %s: %v", name, err)
		}
	}()
	hosts := c.Hosts() // from here on: contact points and SSH only
	knownHosts := scanHostKeys(t, dir, hosts)

	x := runner.External{Hosts: hosts, Keyspace: "lc_ssh", Log: log, SSH: &sshnode.Config{
		KeyFile: keyFile, KnownHosts: knownHosts, StartCmd: startCmd,
	}}
	nodeKinds := []string{nemesis.Partition, nemesis.Pause, nemesis.Kill, nemesis.Clock, nemesis.Loss}

	t.Run("refusals", func(t *testing.T) {
		noSSH := x
		noSSH.SSH = nil
		if _, err := runner.OpenExternal(ctx, noSSH, []string{nemesis.Partition}); err == nil || !strings.Contains(err.Error(), "node access") {
			t.Errorf("node faults without SSH: got %v, want a refusal", err)
		}
		wrongKey := x
		wrongKey.SSH = &sshnode.Config{KeyFile: filepath.Join(dir, "other"), KnownHosts: knownHosts}
		newKeyAt(t, wrongKey.SSH.KeyFile)
		if _, err := runner.OpenExternal(ctx, wrongKey, nodeKinds); err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
			t.Errorf("wrong key: got %v, want an authentication error", err)
		}
		noKill := x
		noKill.SSH = &sshnode.Config{KeyFile: keyFile, KnownHosts: knownHosts}
		if _, err := runner.OpenExternal(ctx, noKill, []string{nemesis.Kill}); err == nil || !strings.Contains(err.Error(), "--ssh-start-cmd") {
			t.Errorf("kill without a start command: got %v, want a refusal", err)
		}
	})

	for _, row := range []struct {
		lock    string
		kinds   []string
		time    time.Duration
		want    checker.Verdict
		withSSH bool
	}{
		{"lease", []string{nemesis.ClientPause}, 30 * time.Second, checker.Invalid, false},
		{"lease-fenced", nodeKinds, 60 * time.Second, checker.Valid, true},
	} {
		t.Run(row.lock+"/"+strings.Join(row.kinds, "_"), func(t *testing.T) {
			xr := x
			if !row.withSSH {
				xr.SSH = nil
			}
			env, err := runner.OpenExternal(ctx, xr, row.kinds)
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			if !row.withSSH && len(env.Targets()) != 0 {
				t.Fatalf("targets without SSH: %v", env.Targets())
			}
			if row.withSSH {
				leaveFaults(ctx, t, env)
				twoUsers(ctx, t, x, env)
			}
			rt := runner.Defaults()
			rt.Recipe, err = runner.LookupRecipe(row.lock)
			if err != nil {
				t.Fatal(err)
			}
			rt.Nemesis, rt.Time, rt.Seed, rt.Store, rt.Log = row.kinds, row.time, 13, t.TempDir(), log
			rt.Interval, rt.Quiet = 3*time.Second, 3*time.Second
			out, err := runner.Run(ctx, env, runner.ReportStore{}, rt)
			if err != nil {
				t.Fatalf("run: %v (dir %s)", err, out.Dir)
			}
			t.Logf("%s under %v: %s, %d ops, faults %v; %s", row.lock, row.kinds, out.Verdict, out.Ops, out.Faults, out.Phases)
			if out.Verdict != row.want {
				t.Errorf("verdict %s, want %s; report %s", out.Verdict, row.want, out.Dir)
			}
			if row.withSSH {
				if len(out.Faults) < 3 {
					t.Errorf("node fault kinds started: %v, want 3 or more; report %s", out.Faults, out.Dir)
				}
				// What a killed harness left was healed over SSH and recorded.
				h, err := os.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				if n := strings.Count(string(h), `"f":"heal-leftover"`); n != 3 || !strings.Contains(string(h), `"healed":["partition","pause"]`) {
					t.Errorf("%d heal-leftover lines, want 3, one with partition and pause", n)
				}
			}
		})
	}

	// Nothing left behind: no lockcheck chain, clock offsets at zero, a JVM
	// running and continued on every host.
	d, err := sshnode.NewDialer(*x.SSH)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		n, err := d.Dial(ctx, h, h)
		if err != nil {
			t.Fatal(err)
		}
		out, err := n.Exec(ctx, "iptables", "-w", "-S")
		if err != nil || strings.Contains(out, "LOCKCHECK") {
			t.Errorf("%s: rules left: %v\n%s", h, err, out)
		}
		if off, err := n.ClockOffset(ctx); err != nil || off != 0 {
			t.Errorf("%s: clock offset %v left (%v)", h, off, err)
		}
		if st, err := n.State(ctx); err != nil || st != "running" {
			t.Errorf("%s: state %q (%v), want running", h, st, err)
		}
		n.Close()
	}
}

// twoUsers: with the hosts cut off from CQL by a leftover partition, the
// lease is taken over SSH; a second user who names one of the hosts is
// refused with the holder's name; a holder whose SSH connection dies (its
// process killed) holds nothing a moment later.
func twoUsers(ctx context.Context, t *testing.T, x runner.External, env *runner.ExternalEnv) {
	t.Helper()
	lease, err := exclusive.Take(ctx, env.Lease(), exclusive.NoWait(true))
	if err != nil {
		t.Fatalf("take the hosts behind a partition: %v", err)
	}
	one := x
	one.Hosts = x.Hosts[:1]
	other, err := runner.OpenExternal(ctx, one, nil)
	if err != nil {
		t.Fatal(err)
	}
	var busy *exclusive.BusyError
	if _, err := exclusive.Take(ctx, other.Lease(), exclusive.NoWait(true)); !errors.As(err, &busy) || !busy.Holder.Same(exclusive.Self()) {
		t.Errorf("a second user of %s: %v; want refused, naming this process", one.Hosts[0], err)
	}
	lease.Release()
	if _, err := exclusive.Take(ctx, other.Lease(), exclusive.NoWait(true)); err != nil {
		t.Fatalf("%s after the release: %v", one.Hosts[0], err)
	}
	other.Close() // the holder's connection dies without a release
	deadline := time.Now().Add(15 * time.Second)
	for {
		l, err := exclusive.Take(ctx, env.Lease(), exclusive.NoWait(true))
		if err == nil {
			l.Release()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("15 s after its holder's connection died, the lease: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// leaveFaults leaves what a harness killed mid-run would: the first host's
// JVM stopped, and every host cutting the harness's clients off (its SSH
// let through, as lockcheck's chains do), so that no CQL gets through
// until the next run has healed over SSH.
func leaveFaults(ctx context.Context, t *testing.T, env *runner.ExternalEnv) {
	ts := env.Targets()
	if err := ts[0].Node.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tg := range ts {
		for _, cmd := range [][]string{
			{"iptables", "-w", "-N", "LOCKCHECK-PARTITION"},
			{"iptables", "-w", "-A", "LOCKCHECK-PARTITION", "-p", "tcp", "--dport", "22", "-j", "RETURN"},
			{"iptables", "-w", "-A", "LOCKCHECK-PARTITION", "-s", env.GatewayIP(), "-j", "DROP"},
			{"iptables", "-w", "-I", "INPUT", "-j", "LOCKCHECK-PARTITION"},
		} {
			if _, err := tg.Node.Exec(ctx, cmd...); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// newKey writes an ed25519 key pair for the nodes' root login.
func newKey(t *testing.T, dir string) (keyFile, authorized string) {
	keyFile = filepath.Join(dir, "id")
	pub := newKeyAt(t, keyFile)
	return keyFile, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
}

func newKeyAt(t *testing.T, file string) ssh.PublicKey {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// scanHostKeys writes a known_hosts file of the hosts' keys, as a user's
// ssh-keyscan would (sshd may take a moment to listen).
func scanHostKeys(t *testing.T, dir string, hosts []string) string {
	var mu sync.Mutex
	var lines []string
	for _, h := range hosts {
		addr := net.JoinHostPort(h, "22")
		cfg := &ssh.ClientConfig{User: "root", Timeout: 5 * time.Second,
			HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error {
				mu.Lock()
				defer mu.Unlock()
				lines = append(lines, knownhosts.Line([]string{knownhosts.Normalize(addr)}, k))
				return nil
			}}
		deadline := time.Now().Add(time.Minute)
		for {
			c, err := ssh.Dial("tcp", addr, cfg) // no auth method: fails after the host key
			if c != nil {
				c.Close()
			}
			if err == nil || !strings.Contains(err.Error(), "connect") || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Second)
		}
	}
	if len(lines) != len(hosts) {
		t.Fatalf("host keys of %d of %d hosts", len(lines), len(hosts))
	}
	file := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
