package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/checker/synth"
	"github.com/lockcheck/lockcheck/history"
)

const evilLock = `<script>alert("x")</script>`

// writeHistory writes ops, with their own indexes and times, as a run
// directory's history.jsonl.
func writeHistory(t *testing.T, dir string, ops []history.Op) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i, op := range ops {
		op.Index = int64(i)
		if err := enc.Encode(op); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, HistoryFile), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// overlapping is a history where two processes hold evilLock at once,
// with a partition window and a meta line.
func overlapping() []history.Op {
	meta, _ := json.Marshal(history.Meta{Test: "t<b>1</b>", Lock: "racy", Promise: history.PromiseMutex,
		Config: map[string]string{"clients": "2", "note": "<img src=x onerror=alert(1)>"}})
	op := func(p int, typ history.Type, f string) history.Op {
		return history.Op{Process: p, Type: typ, F: f, Lock: evilLock}
	}
	ops := []history.Op{
		{Process: -1, Type: history.Info, F: history.FMeta, Value: meta},
		{Process: -1, Type: history.Info, F: "start-partition", Value: json.RawMessage(`["n1"]`)},
		op(0, history.Invoke, "acquire"), op(0, history.OK, "acquire"),
		op(1, history.Invoke, "acquire"), op(1, history.OK, "acquire"),
		op(0, history.Invoke, "release"), op(0, history.OK, "release"),
		{Process: -1, Type: history.Info, F: "stop-partition"},
		op(1, history.Invoke, "release"), op(1, history.OK, "release"),
	}
	for i := range ops {
		ops[i].Time = int64(i) * 10e6
	}
	return ops
}

func TestBuildReportShowsVerdictAndEscapes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store", "t", "20260101T000000")
	writeHistory(t, dir, overlapping())
	res, err := Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != checker.Invalid {
		t.Fatalf("verdict %s, want invalid", res.Verdict)
	}
	b, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	if !regexp.MustCompile(`id="verdict">invalid<`).MatchString(html) {
		t.Error("report lacks the verdict at the top")
	}
	if strings.Contains(html, evilLock) || strings.Contains(html, "<img src=x") || strings.Contains(html, "<b>1</b>") {
		t.Error("report contains an unescaped string from the history")
	}
	if !strings.Contains(html, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
		t.Error("report lacks the escaped lock name")
	}
	for _, want := range []string{"overlapping-holds", "non-linearizable", `class="fault"`, `class="anom"`, "porcupine/", "start-partition"} {
		if !strings.Contains(html, want) && !(want == "start-partition" && strings.Contains(html, "partition ")) {
			t.Errorf("report lacks %q", want)
		}
	}
	if regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).MatchString(html) {
		t.Error("report refers to the network")
	}
	var stored checker.Result
	rb, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rb, &stored); err != nil || stored.Verdict != checker.Invalid || len(stored.Anomalies) != 2 {
		t.Fatalf("results.json: %v, %+v", err, stored)
	}
	vis, _ := filepath.Glob(filepath.Join(dir, "porcupine", "*.html"))
	if len(vis) != 1 {
		t.Fatalf("porcupine visualizations %v, want one", vis)
	}
	// The partition shows in porcupine's visualization as an annotation,
	// and in the report's legend in its kind's colour.
	vb, err := os.ReadFile(vis[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(vb), `"Tag":"nemesis"`) || !strings.Contains(string(vb), `"Description":"partition"`) {
		t.Error("porcupine visualization lacks the partition annotation")
	}
	if c := faultColor("partition", nil); !strings.Contains(html, "background:"+c) || !strings.Contains(html, `fill="`+c+`"`) {
		t.Errorf("report lacks the partition in its colour %s", c)
	}
}

func TestBuildRefusesBadHistory(t *testing.T) {
	dir := t.TempDir()
	bad := `{"index":0,"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}` + "\n" +
		`{"index":1,"time":0,"process":0,"type":"ok","f":"release","lock":"l"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, HistoryFile), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Build(context.Background(), dir)
	if !errors.Is(err, history.ErrInvalid) {
		t.Fatalf("Build = %v, want ErrInvalid", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	if !strings.Contains(string(b), "history line 2") {
		t.Fatalf("error report lacks the line: %s", b)
	}
	if _, err := os.Stat(filepath.Join(dir, ResultsFile)); err == nil {
		t.Fatal("results.json written for an unreadable history")
	}
}

// A big history still gives a report of bounded size: the timeline and
// charts are summarized.
func TestBigHistoryReportIsSummarized(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	dir := t.TempDir()
	writeHistory(t, dir, synth.Ops(synth.Config{Events: 200000, Clients: 40, Locks: 300, InfoRate: 0.02, FailRate: 0.05, Seed: 3, Nemesis: 2 * time.Second}))
	if _, err := Build(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 3<<20 {
		t.Fatalf("report.html is %d bytes for 200k events", st.Size())
	}
	b, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	if n := strings.Count(string(b), "<rect"); n > 40000 {
		t.Fatalf("%d SVG rects", n)
	}
}

func TestStoreRunDirsLatestAndIndex(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	at := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	d1, err := NewRunDir(store, "lease", at)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(store, "lease", "20261121T230000"); d1 != want {
		t.Fatalf("run dir %s, want %s", d1, want)
	}
	d2, err := NewRunDir(store, "lease", at) // same second
	if err != nil || d2 != d1+"-2" {
		t.Fatalf("second run dir %s, %v", d2, err)
	}
	if _, err := NewRunDir(store, "../x", at); err == nil {
		t.Fatal("NewRunDir accepted a test name with a slash")
	}
	writeHistory(t, d1, overlapping())
	if _, err := Build(context.Background(), d1); err != nil {
		t.Fatal(err)
	}
	if err := UpdateLatest(store, d1); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{filepath.Join(store, "latest"), filepath.Join(store, "lease", "latest")} {
		target, err := filepath.EvalSymlinks(link)
		if err != nil {
			t.Fatal(err)
		}
		real, _ := filepath.EvalSymlinks(d1)
		if target != real {
			t.Errorf("%s -> %s, want %s", link, target, real)
		}
	}
	runs, err := ListRuns(store)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Dir != "lease/20261121T230000-2" || runs[1].Verdict != checker.Invalid || runs[1].Anomaly != 2 {
		t.Fatalf("runs %+v", runs)
	}

	srv := httptest.NewServer(Handler(store))
	defer srv.Close()
	body := get(t, srv.URL+"/")
	for _, want := range []string{"lease/20261121T230000/report.html", "v-invalid", "INVALID", "history.jsonl", "not checked"} {
		if !strings.Contains(body, want) {
			t.Errorf("index lacks %q", want)
		}
	}
	if !strings.Contains(get(t, srv.URL+"/latest/report.html"), `id="verdict">invalid<`) {
		t.Error("latest/report.html not served")
	}
	if resp, err := http.Get(srv.URL + "/../../etc/passwd"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), "root:") {
			t.Error("serve escaped the store")
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return string(b)
}

func TestFaultViews(t *testing.T) {
	ev := func(ms int64, f string) history.Op {
		return history.Op{Time: ms * 1e6, Process: -1, Type: history.Info, F: f}
	}
	ops := []history.Op{
		ev(1, "start-partition"), ev(2, "stop-partition"),
		ev(3, "start-pause"), ev(4, "start-pause"), ev(5, "stop-pause"), ev(6, "stop-pause"),
		ev(7, "start-kill-failed"), ev(8, "start-clock"), ev(9, "kill"),
		ev(10, "start-power-loss"), ev(11, "stop-power-loss"), // a kind this package never heard of
	}
	meta := &history.Meta{Faults: map[string]history.FaultStyle{"partition": {Color: "#010203"}}}
	w, marks := faultViews(ops, meta, 20e6)
	got := ""
	for _, f := range w {
		got += fmt.Sprintf("%s %d-%d;", f.Kind, f.Start/1e6, f.End/1e6)
	}
	if want := "partition 1-2;pause 3-6;clock 8-20;power-loss 10-11;"; got != want {
		t.Errorf("windows %q, want %q", got, want)
	}
	if w[0].Color != "#010203" {
		t.Errorf("partition drawn in %s, not the meta line's colour", w[0].Color)
	}
	if w[3].Color == "" || w[3].Color != faultColor("power-loss", nil) {
		t.Errorf("an unknown kind has colour %q, want a stable one", w[3].Color)
	}
	if len(marks) != 2 || marks[0].name != "start-kill-failed" || marks[1].name != "kill" {
		t.Errorf("marks %+v", marks)
	}
	l := legend(w)
	if len(l) != 4 || l[1].Kind != "pause" || l[1].Windows != 1 || l[0].Color != "#010203" {
		t.Errorf("legend %+v", l)
	}
	rs := faultRects(w, 20e6, 0, 10, true)
	if rs[0].Fill != "#010203" || rs[2].Label != "clock" {
		t.Errorf("rects %+v", rs)
	}
}

// TestLeftoverHealShownInFaultLegends: a run that healed a node an earlier,
// killed run left frozen has no fault window of its own, yet its report must
// not say "no fault windows" or "faults: none" alone.
func TestLeftoverHealShownInFaultLegends(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store", "t", "20260101T000000")
	heal, _ := json.Marshal(history.HealLeftover{Node: "n1", Healed: []string{"pause", "clock"}})
	ops := []history.Op{
		{Process: -1, Type: history.Info, F: history.FHealLeftover, Node: "n1", Value: heal},
		{Process: 0, Type: history.Invoke, F: "acquire", Lock: "l"}, {Process: 0, Type: history.OK, F: "acquire", Lock: "l"},
		{Process: 0, Type: history.Invoke, F: "release", Lock: "l"}, {Process: 0, Type: history.OK, F: "release", Lock: "l"},
	}
	for i := range ops {
		ops[i].Time = int64(i) * 10e6
	}
	writeHistory(t, dir, ops)
	if _, err := Build(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	// Both legends (timeline, latency chart) and the configuration table.
	if n := strings.Count(html, "healed before the run (an earlier run left it): n1: pause, clock;"); n != 2 {
		t.Errorf("fault legends name the leftover heal %d times, want 2", n)
	}
	if !strings.Contains(html, "healed before the run</td>") && !strings.Contains(html, "healed before the run<") {
		t.Error("configuration lacks the leftover heal")
	}
}

func TestActiveFaults(t *testing.T) {
	faults := []faultView{
		{FaultWindow: history.FaultWindow{Kind: "partition", Start: 10, End: 20, Nodes: []string{"n1"}}},
		{FaultWindow: history.FaultWindow{Kind: "loss", Start: 30, End: 40}},
	}
	kinds := func(start, end int64) string {
		var out []string
		for _, f := range activeFaults(faults, start, end) {
			out = append(out, f.Kind)
		}
		return strings.Join(out, ",")
	}
	for _, tt := range []struct {
		start, end int64
		want       string
	}{
		{0, 5, ""},
		{0, 10, "partition"},
		{15, 16, "partition"},
		{20, 29, "partition"},
		{21, 29, ""},
		{18, 35, "partition,loss"},
		{35, checker.Never, "loss"},
	} {
		if got := kinds(tt.start, tt.end); got != tt.want {
			t.Errorf("active in [%d, %d] = %q, want %q", tt.start, tt.end, got, tt.want)
		}
	}
}

// A run whose set-up failed is stored as such: its report says no test
// ran, its verdict is unknown, the index marks it, and foreign state from
// the meta line shows in the legends rather than "no fault windows" alone.
func TestFailedSetupAndForeignState(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	dir := filepath.Join(store, "t", "20260101T000000")
	meta, _ := json.Marshal(history.Meta{Test: "t", Lock: "lease", Promise: history.PromiseMutex,
		Foreign: []history.Foreign{{Node: "n2", What: "iptables rule -A INPUT -s 10.9.0.3/32 -j DROP"}}})
	failed, _ := json.Marshal(history.SetupFailed{Cause: "set up the cluster: n2 does not see every node up"})
	writeHistory(t, dir, []history.Op{
		{Process: -1, Type: history.Info, F: history.FMeta, Value: meta},
		{Process: -1, Type: history.Info, F: history.FSetupFailed, Value: failed, Time: 1e6},
	})
	res, err := Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != checker.Unknown || res.SetupFailed == "" {
		t.Fatalf("verdict %s, setup_failed %q", res.Verdict, res.SetupFailed)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	html := string(b)
	for _, want := range []string{"set-up failed, so no test ran", "n2: iptables rule -A INPUT -s 10.9.0.3/32 -j DROP"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	runs, err := ListRuns(store)
	if err != nil || len(runs) != 1 || runs[0].SetupFailed == "" {
		t.Fatalf("ListRuns = %+v, %v", runs, err)
	}
	rec := httptest.NewRecorder()
	Handler(store).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if !strings.Contains(rec.Body.String(), "failed set-up") {
		t.Error("index does not mark the failed set-up")
	}
}

// TestFaultRows: the report's table of fault windows says what each
// membership window moved and when (from its start and stop lines), shows
// another kind's recorded values, marks a window never stopped, and bounds
// its length.
func TestFaultRows(t *testing.T) {
	s := int64(time.Second)
	join := faultView{FaultWindow: history.FaultWindow{Kind: history.KindJoin, Start: 2 * s, End: 63 * s, Nodes: []string{"n5"},
		Value:  json.RawMessage(`{"how":"bootstrap, then decommission","node":"n5","ring":{"n2":"UN","n1":"UN"}}`),
		Closed: true, Stop: json.RawMessage(`{"moved":{"n1":"UN","n2":"UN","n5":"UN"},"ms":61000,"node":"n5","ring":{"n1":"UN","n2":"UN"},"streamed_ms":38200,` +
			`"resumed":["nodetool bootstrap resume"],"waited_ms":7000}`)}}
	pause := faultView{FaultWindow: history.FaultWindow{Kind: "pause", Start: 70 * s, End: 75 * s, Nodes: []string{"n1"},
		Closed: true, Stop: json.RawMessage(`{"frozen":"jvm"}`)}, value: `{"how":"sigstop"}`}
	open := faultView{FaultWindow: history.FaultWindow{Kind: "partition", Start: 80 * s, End: 90 * s}, value: `{"cut":"n2"}`}

	rows, more := faultRows([]faultView{join, pause, open})
	if more != 0 || len(rows) != 3 {
		t.Fatalf("%d rows, %d more; want 3, 0", len(rows), more)
	}
	for _, want := range []string{"n5: bootstrap, then decommission", "ring before: n1 UN, n2 UN", "waited 7.0s",
		"streaming done 38.2s in (ring then: n1 UN, n2 UN, n5 UN)", "completed after a failure: nodetool bootstrap resume",
		"ring after (61.0s in): n1 UN, n2 UN"} {
		if !strings.Contains(rows[0].Detail, want) {
			t.Errorf("join detail %q lacks %q", rows[0].Detail, want)
		}
	}
	if rows[0].Length != "61.0s" || rows[0].Nodes != "n5" || strings.Contains(rows[0].To, "still") {
		t.Errorf("join row %+v", rows[0])
	}
	if rows[1].Detail != `{"how":"sigstop"}; stop: {"frozen":"jvm"}` {
		t.Errorf("pause detail %q, want its start and stop values", rows[1].Detail)
	}
	if !strings.Contains(rows[2].To, "still in effect at the end") || rows[2].Detail != `{"cut":"n2"}` {
		t.Errorf("open window row %+v", rows[2])
	}

	many := make([]faultView, maxFaultRows+7)
	for i := range many {
		many[i] = pause
	}
	if rows, more := faultRows(many); len(rows) != maxFaultRows || more != 7 {
		t.Errorf("%d windows: %d rows, %d more; want %d and 7", len(many), len(rows), more, maxFaultRows)
	}
}

func TestStuckLockSaidAtTheTop(t *testing.T) {
	// Process 0 takes l with no lease, its add comes back unknown at 30 ms;
	// process 1 then waits on l in vain until the run ends at 100 ms.
	stuck := func(config map[string]string) []history.Op {
		meta, _ := json.Marshal(history.Meta{Test: "t", Lock: "music-seq", Promise: history.PromiseMutex, Config: config})
		op := func(ms int64, p int, typ history.Type, f string) history.Op {
			return history.Op{Time: ms * 1e6, Process: p, Type: typ, F: f, Lock: "l", Value: json.RawMessage(`1`)}
		}
		return []history.Op{
			{Process: -1, Type: history.Info, F: history.FMeta, Value: meta},
			op(10, 0, history.Invoke, "acquire"), op(15, 0, history.OK, "acquire"),
			op(20, 0, history.Invoke, "add"), op(30, 0, history.Info, "add"),
			op(40, 1, history.Invoke, "acquire"), op(90, 1, history.Fail, "acquire"),
			op(100, 2, history.Invoke, "read"), op(100, 2, history.OK, "read"),
		}
	}
	tests := []struct {
		name   string
		config map[string]string
		want   bool
	}{
		{"clients left waiting", map[string]string{"locks": "1"}, true},
		{"clients moved on", map[string]string{"locks": "1", history.ConfigRetireStuck: "true"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store", "t", "20260101T000000")
			ops := stuck(tt.config)
			ops[len(ops)-1].Value = json.RawMessage(`[]`)
			if !tt.want {
				// The clients moved on to l.1.
				ops = slices.Insert(ops, len(ops)-2,
					history.Op{Time: 92e6, Process: 1, Type: history.Invoke, F: "acquire", Lock: "l.1"},
					history.Op{Time: 95e6, Process: 1, Type: history.OK, F: "acquire", Lock: "l.1"})
			}
			writeHistory(t, dir, ops)
			res, err := Build(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != checker.Valid {
				t.Fatalf("verdict %s, want valid (%+v)", res.Verdict, res.Anomalies)
			}
			b, err := os.ReadFile(filepath.Join(dir, ReportFile))
			if err != nil {
				t.Fatal(err)
			}
			html := string(b)
			said := strings.Contains(html, `id="stuck"`)
			if said != tt.want {
				t.Fatalf("stuck line shown %v, want %v", said, tt.want)
			}
			if said && !strings.Contains(html, "lock <code>l</code> from 0.030s (70% of the run") {
				t.Errorf("stuck line lacks the lock, its moment and share: %s", html[strings.Index(html, `id="stuck"`):][:400])
			}
			if !strings.Contains(html, "stuck-lock") {
				t.Error("findings lack the stuck lock")
			}
			// The configuration says how many names the history holds
			// beside the configured count.
			if moved := strings.Contains(html, "1 configured, 2 names in the history"); moved == tt.want {
				t.Errorf("locks row names the history's 2 names: %v, want %v", moved, !tt.want)
			}
		})
	}
}
