package reports

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/lockcheck/lockcheck/checker/synth"
)

// chromiumPath finds Debian's chromium (LOCKCHECK_CHROMIUM overrides). A
// machine without it skips the test, so that `go test ./...` needs no
// browser; `make test` sets LOCKCHECK_BROWSER=1 (and its set-up installs
// Chromium), and there a missing browser fails instead of passing unseen.
// longName is a run's test name as `make run` makes it.
const longName = "lease-fenced-partition_pause_kill_clock_client-pause_client-clock_loss-20261123T214129-l0"

func chromiumPath(t *testing.T) string {
	if p := os.Getenv("LOCKCHECK_CHROMIUM"); p != "" {
		return p
	}
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	const missing = "headless Chromium not found at /usr/bin/chromium: install it with `scripts/setup.sh test` " +
		"(or apt-get install -y chromium), or point LOCKCHECK_CHROMIUM at it"
	if os.Getenv("LOCKCHECK_BROWSER") == "1" {
		t.Fatal(missing + " (LOCKCHECK_BROWSER=1: the browser test must run)")
	}
	t.Skip(missing + "; set LOCKCHECK_BROWSER=1 to make this a failure")
	return ""
}

// browser records what a page did: console errors, exceptions and every
// request it made.
type browser struct {
	mu       sync.Mutex
	errors   []string
	requests []string
}

func (b *browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value))
			}
			b.errors = append(b.errors, "console."+string(e.Type)+": "+strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		b.errors = append(b.errors, "exception: "+e.ExceptionDetails.Text)
	case *cdplog.EventEntryAdded:
		if e.Entry.Level == cdplog.EntryLevelError {
			b.errors = append(b.errors, "log: "+e.Entry.Text+" "+e.Entry.URL)
		}
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, e.Request.URL)
	}
}

// TestReportAndIndexInHeadlessChromium opens the served index, a report
// through the server and the same report from disk; each must render with
// no console error and request nothing but the local server (or the run's
// own files).
func TestReportAndIndexInHeadlessChromium(t *testing.T) {
	exe := chromiumPath(t)
	store := filepath.Join(t.TempDir(), "store")
	dir, err := NewRunDir(store, "browser", time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	ops := synth.Ops(synth.Config{Events: 5000, Clients: 5, Locks: 2, InfoRate: 0.05, FailRate: 0.05,
		Lease: 300 * time.Millisecond, Nemesis: 2 * time.Second, Anomaly: synth.AnomalyOverlap, Seed: 7,
		// Lock names as long as a run's (test name, run, lock): the
		// report's tables must still fit the window.
		LockName: func(i int) string { return fmt.Sprintf("%s-%d-%s", evilLock, i, longName) }})
	writeHistory(t, dir, ops)
	if _, err := Build(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(store))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(exe), chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1300, 900),
	)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	var b browser
	if err := chromedp.Listen(bctx, b.listen); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	if _, err := chromedp.Call(bctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	if _, err := chromedp.Call(bctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(bctx, runtime.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv("LOCKCHECK_SCREENSHOTS") // keep the screenshots there when set
	if shots == "" {
		shots = t.TempDir()
	}
	pages := []struct {
		name, url, ready, verdictSel, want string
		allowed                            string // URL prefix every request must have
	}{
		{"index", srv.URL + "/", "#runs", "#runs", "INVALID", srv.URL + "/"},
		{"report-served", srv.URL + "/browser/latest/report.html", "#timeline", "#verdict", "invalid", srv.URL + "/"},
		{"report-file", "file://" + filepath.Join(dir, ReportFile), "#timeline", "#verdict", "invalid", "file://" + dir + "/"},
	}
	// Porcupine's visualizations, linked from the report, open too.
	vis, _ := filepath.Glob(filepath.Join(dir, "porcupine", "*.html"))
	if len(vis) == 0 {
		t.Fatal("no porcupine visualization written")
	}
	pages = append(pages, struct {
		name, url, ready, verdictSel, want string
		allowed                            string
	}{"porcupine", "file://" + vis[0], "body", "", "", "file://" + dir + "/"})
	for _, p := range pages {
		b.mu.Lock()
		b.errors, b.requests = nil, nil
		b.mu.Unlock()
		if err := chromedp.Do(bctx, chromedp.Navigate(p.url), chromedp.WaitVisible(p.ready)); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		var text string
		if p.verdictSel != "" {
			if text, err = chromedp.Run(bctx, chromedp.Text(p.verdictSel)); err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
		}
		rects, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("svg rect").length`))
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		// The page fits the window: nothing wider than 1,300 pixels
		// (a report is read beside other windows; the bound is 1,400).
		if strings.HasPrefix(p.name, "report") || p.name == "index" {
			w, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
			if err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
			if w > 1300 {
				t.Errorf("%s: %d pixels wide, wider than the 1300-pixel window", p.name, w)
			}
		}
		shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if !strings.Contains(text, p.want) {
			t.Errorf("%s: %q lacks %q", p.name, text, p.want)
		}
		if p.name == "report-file" {
			// The escaped lock name shows as text, not as markup.
			title, err := chromedp.Run(bctx, chromedp.TextContent("#timeline"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(title, `<script>alert("x")</script>-0`) {
				t.Errorf("timeline text %q lacks the lock name as text", title[:min(len(title), 200)])
			}
		}
		if strings.HasPrefix(p.name, "report") && rects < 20 {
			t.Errorf("%s: only %d SVG rects rendered", p.name, rects)
		}
		if len(shot) < 10000 {
			t.Errorf("%s: screenshot of %d bytes", p.name, len(shot))
		}
		if err := os.WriteFile(filepath.Join(shots, p.name+".png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
		b.mu.Lock()
		for _, e := range b.errors {
			t.Errorf("%s: %s", p.name, e)
		}
		if len(b.requests) == 0 {
			t.Errorf("%s: no request seen (is the network domain listened to?)", p.name)
		}
		for _, r := range b.requests {
			if !strings.HasPrefix(r, p.allowed) && !strings.HasPrefix(r, "data:") {
				t.Errorf("%s: request to %s (only %s is allowed)", p.name, r, p.allowed)
			}
		}
		b.mu.Unlock()
	}
}
