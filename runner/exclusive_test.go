package runner

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/exclusive"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
)

// busyStore is a lease another process holds.
type busyStore struct{ h exclusive.Holder }

func (busyStore) Key() string { return "test:busy" }
func (s busyStore) TryTake(context.Context, exclusive.Holder) (func(), exclusive.Holder, error) {
	return nil, s.h, nil
}
func (s busyStore) Holder(context.Context) (exclusive.Holder, bool, error) { return s.h, true, nil }

// leaseEnv is fakeEnv with a lease, a health check and nodes of its own.
type leaseEnv struct {
	fakeEnv
	lease   exclusive.Store
	healthy error
	nodes   []nemesis.Target
}

func (e leaseEnv) Lease() exclusive.Store                 { return e.lease }
func (e leaseEnv) WaitHealthy(context.Context) error      { return e.healthy }
func (e leaseEnv) Targets() []nemesis.Target              { return e.nodes }
func (e leaseEnv) Describe() map[string]string            { return nil }
func (e leaseEnv) CopyLogs(context.Context, string) error { return nil }

// A run on a cluster another process holds refuses with --no-wait, naming
// the holder, and leaves no run directory.
func TestRunRefusesAHeldCluster(t *testing.T) {
	root := t.TempDir()
	holder := exclusive.Holder{Host: "ci-7", PID: 4242, Command: "lockcheck run --nemesis pause", Started: time.Now()}
	tc := Defaults()
	tc.Recipe, tc.Time, tc.NoWait = memRecipe("mutex", history.PromiseMutex, &memLocks{}), 300*time.Millisecond, true
	_, err := Run(context.Background(), leaseEnv{lease: busyStore{holder}}, memStore{root}, tc)
	if !errors.Is(err, exclusive.ErrBusy) || !strings.Contains(err.Error(), "pid 4242 on host ci-7") {
		t.Fatalf("err = %v; want ErrBusy naming the holder", err)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Fatalf("a refused run left %d entries in the store", len(ents))
	}
	// Without --no-wait it waits, saying so once, until its context ends.
	var prog bytes.Buffer
	tc.NoWait, tc.Progress = false, &prog
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	if _, err := Run(ctx, leaseEnv{lease: busyStore{holder}}, memStore{root}, tc); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting run: %v", err)
	}
	if n := strings.Count(prog.String(), "in use by pid 4242"); n != 1 {
		t.Fatalf("waiting run said the holder %d times: %q", n, prog.String())
	}
}

// foreignNode has an iptables rule lockcheck did not add.
type foreignNode struct{ nemesis.Node }

func (foreignNode) Capabilities() []nemesis.Capability { return nil }
func (foreignNode) Foreign(context.Context) ([]string, error) {
	return []string{"iptables rule -A INPUT -s 10.9.0.3/32 -j DROP"}, nil
}

// A cluster that never gets healthy (a foreign rule partitions it) is a
// failed set-up: the foreign rule is said before the wait, the run returns
// a SetupError and no verdict, and the store keeps the history marked.
func TestFailedSetupHasNoVerdict(t *testing.T) {
	root := t.TempDir()
	var prog bytes.Buffer
	tc := Defaults()
	tc.Recipe, tc.Time, tc.Progress = memRecipe("mutex", history.PromiseMutex, &memLocks{}), 300*time.Millisecond, &prog
	env := leaseEnv{healthy: errors.New("n2 does not see every node up"), nodes: []nemesis.Target{{Name: "n2", Node: foreignNode{}}}}
	out, err := Run(context.Background(), env, memStore{root}, tc)
	var se *SetupError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "n2 does not see every node up") {
		t.Fatalf("err = %v; want a SetupError with the cause", err)
	}
	if out.Verdict != "" {
		t.Fatalf("a failed set-up has verdict %q", out.Verdict)
	}
	if !strings.Contains(prog.String(), "n2: iptables rule -A INPUT -s 10.9.0.3/32 -j DROP (not lockcheck's") {
		t.Fatalf("progress %q does not name the foreign rule", prog.String())
	}
	res, err := checker.CheckFile(context.Background(), filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != checker.Unknown || !strings.Contains(res.SetupFailed, "does not see every node up") {
		t.Fatalf("stored history checks %s, setup_failed %q; want unknown with the cause", res.Verdict, res.SetupFailed)
	}
	if res.Meta == nil || len(res.Meta.Foreign) != 1 || res.Meta.Foreign[0].Node != "n2" {
		t.Fatalf("meta %+v lacks the foreign rule", res.Meta)
	}
}

// A healthy cluster with a foreign rule runs, and its meta keeps the rule.
func TestForeignStateInMeta(t *testing.T) {
	tc := Defaults()
	tc.Recipe, tc.Time, tc.Quiet = memRecipe("mutex", history.PromiseMutex, &memLocks{}), 300*time.Millisecond, 0
	out, err := Run(context.Background(), leaseEnv{nodes: []nemesis.Target{{Name: "n2", Node: foreignNode{}}}}, memStore{t.TempDir()}, tc)
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict != checker.Valid || out.Result.Meta == nil || len(out.Result.Meta.Foreign) != 1 {
		t.Fatalf("verdict %s, meta %+v: want valid with the foreign rule recorded", out.Verdict, out.Result.Meta)
	}
	if f := out.Result.Meta.Foreign[0]; f.What != "iptables rule -A INPUT -s 10.9.0.3/32 -j DROP" || f.Fix == "" {
		t.Fatalf("foreign %+v", f)
	}
}

// A run killed with SIGKILL leaves its plug-ins' clock directory behind;
// the next run with plug-ins removes the directories of processes that are
// gone, and no other.
func TestSweepFaketimeDirs(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(os.TempDir(), faketimePrefix+strconv.Itoa(cmd.Process.Pid)+"-1")
	mine := filepath.Join(os.TempDir(), faketimePrefix+strconv.Itoa(os.Getpid())+"-2")
	other := filepath.Join(os.TempDir(), faketimePrefix+"x-3")
	for _, d := range []string{gone, mine, other} {
		if err := os.MkdirAll(filepath.Join(d, "c0"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sweepFaketimeDirs(slog.Default())
	for d, want := range map[string]bool{gone: false, mine: true, other: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", filepath.Base(d), err == nil, want)
		}
	}
}
