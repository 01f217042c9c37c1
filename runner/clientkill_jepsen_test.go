//go:build jepsen

package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
)

// client-kill on a plug-in holding the lock, on the shared cluster: the
// holder's whole process group dies (its pid is gone), the history says so
// before the fresh process of the same client starts (a new process number,
// a second plug-in process of that client in the log), the lease frees the
// lock after its TTL (no stuck period at the default bound), and nothing
// of it breaks mutual exclusion. The Python reference plug-in starts in
// well under a second, so the run stays short.
func TestPluginClientKill(t *testing.T) {
	env := ClusterEnv{clustertest.Get(t)}
	run, err := filepath.Abs(filepath.Join("..", "plugins", "python-lease", "run"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt := Defaults()
	rt.Recipe, rt.Nemesis, rt.Time, rt.Seed, rt.Store = CmdRecipe(run, history.PromiseMutex), []string{nemesis.ClientKill}, 20*time.Second, 49, t.TempDir()
	rt.Clients, rt.Interval, rt.Quiet, rt.Log = 4, 4*time.Second, 2*time.Second, testLogger(t)
	rt.KillTarget, rt.KillRestart = nemesis.KillTargetHold, time.Second
	out, err := Run(ctx, env, ReportStore{}, rt)
	if err != nil {
		t.Fatalf("run: %v (log %s)", err, filepath.Join(out.Dir, "lockcheck.log"))
	}
	t.Logf("python-lease under client-kill: %s, %d ops, faults %v; %s", out.Verdict, out.Ops, out.Faults, out.Dir)
	if out.Verdict != checker.Valid {
		t.Errorf("verdict %s, want valid; report %s", out.Verdict, out.Dir)
	}
	if out.Faults[nemesis.ClientKill] == 0 {
		t.Fatalf("no client killed; report %s", out.Dir)
	}
	ops, err := history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var kill history.ClientKillStart
	var stop history.ClientKillStop
	killAt, stopAt := -1, -1
	for i, op := range ops {
		switch {
		case op.F == history.StartF(nemesis.ClientKill) && killAt < 0:
			killAt = i
			json.Unmarshal(op.Value, &kill)
		case op.F == history.StopF(nemesis.ClientKill) && killAt >= 0 && stopAt < 0:
			stopAt = i
			json.Unmarshal(op.Value, &stop)
		}
	}
	if stopAt < 0 || kill.InFlight != nemesis.KillTargetHold || stop.Client != kill.Client || stop.Process != kill.Process+rt.Clients {
		t.Fatalf("kill %+v at line %d, restart %+v at line %d: want a holder killed and its client back as process %d", kill, killAt, stop, stopAt, kill.Process+rt.Clients)
	}
	for _, op := range ops[killAt+1:] {
		if op.Process == kill.Process {
			t.Errorf("the killed process %d went on: %+v", kill.Process, op)
		}
	}
	for _, op := range ops[:stopAt] {
		if op.Process == stop.Process {
			t.Errorf("the fresh process %d ran before its restart line: %+v", stop.Process, op)
		}
	}
	// The log: the plug-in process killed, and a second one of the client
	// started after it.
	log, err := os.ReadFile(filepath.Join(out.Dir, "lockcheck.log"))
	if err != nil {
		t.Fatal(err)
	}
	c := strconv.Itoa(kill.Client)
	killed := regexp.MustCompile(`msg="plug-in killed \(client-kill\)".* client=` + c + ` pid=(\d+)`).FindSubmatch(log)
	if killed == nil {
		t.Fatalf("no plug-in process of client %s killed in the log", c)
	}
	if pid, _ := strconv.Atoi(string(killed[1])); syscall.Kill(pid, 0) == nil {
		t.Errorf("killed plug-in process %d still there", pid)
	}
	started := regexp.MustCompile(`msg="plug-in started".* client=` + c + ` pid=(\d+) .*process=2 `).FindSubmatch(log)
	if started == nil || string(started[1]) == string(killed[1]) {
		t.Errorf("no fresh plug-in process of client %s started after the kill", c)
	}
	if st := out.Result.Liveness.StuckAtEnd(); len(st) > 0 {
		t.Errorf("the lease did not free the lock: %s", st[0].Message)
	}
	if left := processesWith("lease_plugin.py"); len(left) > 0 {
		t.Errorf("plug-in processes left running: %v", left)
	}
}
