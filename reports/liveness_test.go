package reports

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// A holder killed by client-kill on a lock with no lease: the report shows
// each lock's availability and the stuck period with its moment, holder and
// cause, and the timeline labels keep what tells long lock names apart.
func TestReportLiveness(t *testing.T) {
	long := "shedlock-client-kill-leader-20261129T033658-"
	meta, _ := json.Marshal(history.Meta{Test: "t", Lock: "music-seq", Promise: history.PromiseMutex,
		Config: map[string]string{"clients": "3", history.ConfigProcesses: history.ProcessesPerClient, "acquire-timeout": "10ms", "stuck-bound": "40ms"}})
	kill, _ := json.Marshal(history.ClientKillStart{Client: 0, InFlight: "hold", Lock: long + "l0", Process: 0, RestartMS: 20})
	restart, _ := json.Marshal(history.ClientKillStop{Client: 0, DownMS: 20, Process: 3})
	op := func(ms int64, p int, typ history.Type, f, lock string) history.Op {
		return history.Op{Time: ms * 1e6, Process: p, Type: typ, F: f, Lock: long + lock}
	}
	ops := []history.Op{
		{Process: -1, Type: history.Info, F: history.FMeta, Value: meta},
		op(1, 0, history.Invoke, "acquire", "l0"), op(2, 0, history.OK, "acquire", "l0"),
		op(3, 1, history.Invoke, "acquire", "l1"), op(4, 1, history.OK, "acquire", "l1"),
		op(5, 1, history.Invoke, "release", "l1"), op(6, 1, history.OK, "release", "l1"),
		{Time: 10e6, Process: -1, Type: history.Info, F: history.StartF(history.KindClientKill), Value: kill},
		op(20, 2, history.Invoke, "acquire", "l0"), op(30, 2, history.Fail, "acquire", "l0"),
		{Time: 31e6, Process: -1, Type: history.Info, F: history.StopF(history.KindClientKill), Value: restart},
		op(32, 3, history.Invoke, "acquire", "l1"), op(33, 3, history.OK, "acquire", "l1"),
		op(34, 3, history.Invoke, "release", "l1"), op(35, 3, history.OK, "release", "l1"),
		op(40, 2, history.Invoke, "acquire", "l0"), op(100, 2, history.Fail, "acquire", "l0"),
	}
	dir := filepath.Join(t.TempDir(), "store", "t", "20260101T000000")
	writeHistory(t, dir, ops)
	if _, err := Build(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, want := range []string{
		`id="availability"`,
		// Said at the top too: the killed holder's lock stayed held.
		`id="stuck-live"`, "from 0.010s (client-kill, process 0)",
		// l0: dead from the kill at 10 ms, asked for from 20 ms to the end at
		// 100 ms: 70 ms beyond the 10 ms time-out, of 99 ms.
		"29.3%", "70ms",
		// l1: always granted within the time-out.
		"100.0%",
		`stuck from 0.010000s: its holder&#39;s process was killed (client-kill), left it held by process 0 (client 0)`,
		"held to the end of the clients&#39; run",
		// The timeline: the run's prefix said once, the labels what differs.
		"Lock names begin with " + long,
		`>l0 · p0<title>` + long + `l0 · p0</title>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
