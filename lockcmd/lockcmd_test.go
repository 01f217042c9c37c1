package lockcmd

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/workload"
)

var testEnv = Env{Hosts: []string{"10.1.0.2:9042", "10.1.0.3:9042"}, Keyspace: "lockcheck", TTL: 3 * time.Second, DC: "datacenter1"}

// start starts client 0 of the fake plug-in in mode; the lock is closed at
// the end of the test, and nothing of it may be left running.
func start(t *testing.T, mode string, opts ...Option) *Lock {
	t.Helper()
	d, err := New(fakeCommand(mode), testEnv, append([]Option{WithGrace(200 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.Start(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pid := l.Process()
		l.Close()
		if pid != 0 && alive(pid) {
			t.Errorf("process %d still running after Close", pid)
		}
	})
	return l
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// answer sends an acquire of the fake's behaviour name and returns the
// fail's error text (the fake answers these with fail).
func answer(t *testing.T, l *Lock, name string) string {
	t.Helper()
	_, err := l.Acquire(ctxFor(t, 5*time.Second), name, "o")
	if !errors.Is(err, workload.ErrNotAcquired) {
		t.Fatalf("acquire %s: %v, want a fail", name, err)
	}
	msg := err.Error()
	// "acquire \"name\": TEXT: lock not acquired"
	msg = strings.TrimPrefix(msg, "acquire \""+name+"\": ")
	return strings.TrimSuffix(msg, ": "+workload.ErrNotAcquired.Error())
}

func TestGrantAndRelease(t *testing.T) {
	l := start(t, "ok")
	before := time.Now()
	g, err := l.Acquire(ctxFor(t, 5*time.Second), "a", "c0-p0")
	if err != nil {
		t.Fatal(err)
	}
	if g.Lock != "a" || g.Owner != "c0-p0" || g.Token != 1 || g.Lease != 1500*time.Millisecond {
		t.Errorf("grant %+v, want a/c0-p0 token 1 lease 1.5s", g)
	}
	// The deadline is the lease counted from the acquire's start: after
	// before+lease, and no later than the call's return+lease (an order, not
	// a bound on how long the call took).
	if d, slack := g.Deadline.Sub(before), time.Since(before); d < 1500*time.Millisecond || d > 1500*time.Millisecond+slack {
		t.Errorf("deadline %v after the call (which took %v), want the lease from the acquire's start", d, slack)
	}
	if _, err := l.Acquire(ctxFor(t, 5*time.Second), "a", "c0-p1"); !errors.Is(err, workload.ErrNotAcquired) ||
		workload.DefaultClassifier(err) != history.Fail {
		t.Errorf("acquire of a held lock: %v, want a definite failure", err)
	}
	if err := l.Release(ctxFor(t, 5*time.Second), g); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctxFor(t, 5*time.Second), g); !errors.Is(err, workload.ErrNotHeld) {
		t.Errorf("second release: %v, want ErrNotHeld", err)
	}
	got := answer(t, l, "env")
	want := "LOCKCHECK_HOSTS=10.1.0.2:9042,10.1.0.3:9042 LOCKCHECK_KEYSPACE=lockcheck LOCKCHECK_CLIENT=0 LOCKCHECK_TTL_MS=3000 LOCKCHECK_DC=datacenter1"
	if got != want {
		t.Errorf("environment %q, want %q", got, want)
	}
}

// A pinned run tells each client its own node (LOCKCHECK_PIN, by client
// number); an unpinned run sets nothing.
func TestPinEnv(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pins   []string
		client int
		want   string
	}{
		{"unpinned", nil, 1, `"" false`},
		{"client 0", []string{"10.1.0.2:9042", "10.1.0.3:9042"}, 0, `"10.1.0.2:9042" true`},
		{"client 1", []string{"10.1.0.2:9042", "10.1.0.3:9042"}, 1, `"10.1.0.3:9042" true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testEnv
			env.Pins = tc.pins
			d, err := New(fakeCommand("ok"), env, WithGrace(200*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			l, err := d.Start(context.Background(), tc.client)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if got := answer(t, l, "pin"); got != tc.want {
				t.Errorf("LOCKCHECK_PIN %s, want %s", got, tc.want)
			}
		})
	}
}

// A plug-in whose setup says "renew":true is a Renewer: a renew extends
// the grant (the reply's lease_ms, or the grant's lease when it has none)
// and keeps its token; a renew of a lock not held is ErrNotHeld. One that
// does not say so is never sent a renew: the leader re-acquires.
func TestRenew(t *testing.T) {
	if l := start(t, "ok"); l.CanRenew() {
		t.Error("a plug-in that did not say renew: CanRenew true")
	} else if g, err := l.Acquire(ctxFor(t, 5*time.Second), "a", "o"); err != nil {
		t.Fatal(err)
	} else if _, err := l.Renew(ctxFor(t, 5*time.Second), g); !errors.Is(err, workload.ErrNotHeld) {
		t.Errorf("renew without renew support: %v, want ErrNotHeld", err)
	}
	l := start(t, "renew")
	if !l.CanRenew() {
		t.Fatal("setup said renew: CanRenew false")
	}
	for _, c := range []struct {
		lock  string
		lease time.Duration
	}{{"a", 2500 * time.Millisecond}, {"samelease", 1500 * time.Millisecond}} {
		g, err := l.Acquire(ctxFor(t, 5*time.Second), c.lock, "c0-p0")
		if err != nil {
			t.Fatal(err)
		}
		before := time.Now()
		ng, err := l.Renew(ctxFor(t, 5*time.Second), g)
		if err != nil {
			t.Fatal(err)
		}
		if ng.Token != g.Token || ng.Lease != c.lease || ng.Deadline.Before(before.Add(c.lease)) {
			t.Errorf("%s: renewed %+v of %+v, want token %d and lease %v from the renew", c.lock, ng, g, g.Token, c.lease)
		}
		other := g
		other.Owner = "c1-p1"
		if _, err := l.Renew(ctxFor(t, 5*time.Second), other); !errors.Is(err, workload.ErrNotHeld) {
			t.Errorf("renew by another owner: %v, want ErrNotHeld", err)
		}
	}
}

// An info reply is an unknown outcome from a healthy plug-in: the process
// stays.
func TestInfoKeepsProcess(t *testing.T) {
	l := start(t, "ok")
	pid := l.Process()
	_, err := l.Acquire(ctxFor(t, 5*time.Second), "info", "o")
	if !errors.Is(err, workload.ErrUnknown) || workload.DefaultClassifier(err) != history.Info {
		t.Errorf("info reply: %v, want an unknown outcome", err)
	}
	if l.Process() != pid {
		t.Errorf("process replaced after an info reply")
	}
}

// A reply that breaks the protocol (or none) is an unknown outcome; the
// process is killed and the next operation runs on a new one.
func TestBrokenReplyReplacesProcess(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"badjson", "not a JSON object"},
		{"wrongid", "carries id"},
		{"silent", "no reply"},
		{"exit", "exited without answering"},
		{"huge", "longer than"},
		{"badtoken", "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := start(t, "ok")
			old := l.Process()
			_, err := l.Acquire(ctxFor(t, 300*time.Millisecond), tc.name, "o")
			if !errors.Is(err, workload.ErrUnknown) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("acquire: %v, want an unknown outcome saying %q", err, tc.want)
			}
			if alive(old) {
				t.Errorf("old process %d still running", old)
			}
			if answer(t, l, "env") == "" {
				t.Fatal("no answer from the new process")
			}
			if now := l.Process(); now == 0 || now == old {
				t.Errorf("process %d after the broken reply of %d", now, old)
			}
		})
	}
}

// A plug-in that cannot start or fails its setup is an error that says why
// in one line, and leaves nothing running.
func TestStartErrors(t *testing.T) {
	for _, tc := range []struct{ name, command, want string }{
		{"not found", "no-such-plugin --x", "not found"},
		{"fails setup", fakeCommand("failsetup"), "no keyspace lockcheck_x"},
		{"banner", fakeCommand("banner"), "not a JSON object"},
		{"exits", "exit 4", "exit status 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(tc.command, testEnv, WithSetupTimeout(20*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			_, err = d.Start(context.Background(), 1)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("start: %v, want one line saying %q", err, tc.want)
			}
		})
	}
}

// Stderr lines go to the logger, with the client and the pid.
func TestStderrLogged(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	d, err := New(fakeCommand("failsetup"), testEnv, WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Start(context.Background(), 2); err == nil {
		t.Fatal("setup did not fail")
	}
	if s := buf.String(); !strings.Contains(s, `line="fake: keyspace missing"`) || !strings.Contains(s, "client=2") {
		t.Errorf("log %q lacks the plug-in's stderr line", s)
	}
}

// PauseProcess stops the process (SIGSTOP) until resume.
func TestPauseProcess(t *testing.T) {
	l := start(t, "ok")
	pid := l.Process()
	resume, err := l.PauseProcess()
	if err != nil {
		t.Fatal(err)
	}
	// The signal is delivered asynchronously: give it a moment.
	for i := 0; procState(t, pid) != "T"; i++ {
		if i == 100 {
			t.Fatalf("state %q while paused, want T (stopped)", procState(t, pid))
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A request sent now waits for the process.
	done := make(chan error, 1)
	go func() { _, err := l.Acquire(ctxFor(t, 5*time.Second), "a", "o"); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("a stopped process answered: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := resume(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("acquire after resume: %v", err)
	}
	if s := procState(t, pid); s == "T" {
		t.Error("still stopped after resume")
	}
}

func procState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) STATE ...: comm may hold spaces, the state follows the last ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return f[0]
}

// Under libfaketime the process's libc clock follows SetClockOffset during
// the run, and a replacement process keeps the client's offset.
func TestClockOffset(t *testing.T) {
	lib, err := FindFaketime()
	if err != nil {
		t.Skip(err) // scripts/setup.sh installs it
	}
	l := start(t, "ok", WithFaketime(lib, t.TempDir()))
	skew := func() time.Duration {
		s, err := strconv.ParseInt(answer(t, l, "date"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return time.Unix(s, 0).Sub(time.Now()).Round(time.Minute)
	}
	if d := skew(); d != 0 {
		t.Errorf("skew %v before any offset", d)
	}
	if err := l.SetClockOffset(-time.Hour); err != nil {
		t.Fatal(err)
	}
	if d := skew(); d != -time.Hour {
		t.Errorf("skew %v, want -1h", d)
	}
	if _, err := l.Acquire(ctxFor(t, 300*time.Millisecond), "badjson", "o"); !errors.Is(err, workload.ErrUnknown) {
		t.Fatal(err)
	}
	if d := skew(); d != -time.Hour {
		t.Errorf("skew %v in the replacement process, want -1h", d)
	}
	if err := l.SetClockOffset(0); err != nil {
		t.Fatal(err)
	}
	if d := skew(); d != 0 {
		t.Errorf("skew %v after the reset", d)
	}
}

// Close kills what ignores its end of input, children included.
func TestCloseKillsGroup(t *testing.T) {
	d, err := New(fakeCommand("deaf"), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.Start(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(answer(t, l, "child"))
	if err != nil {
		t.Fatal(err)
	}
	pid := l.Process()
	l.Close()
	// SIGKILL is delivered at once but a loaded machine may take a moment
	// to end the process: give it 5 s, far less than any test deadline.
	for _, p := range []int{pid, child} {
		deadline := time.Now().Add(5 * time.Second)
		for alive(p) && procStateOK(p) != "Z" && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(p) && procStateOK(p) != "Z" {
			t.Errorf("process %d still running 5 s after Close", p)
		}
	}
	if _, err := l.Acquire(ctxFor(t, time.Second), "a", "o"); !errors.Is(err, workload.ErrNotAcquired) {
		t.Errorf("acquire after Close: %v, want a definite failure", err)
	}
}

func procStateOK(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return f[0]
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// client-kill on a plug-in: KillProcess kills the whole process group (a
// child it started dies too), an acquire in flight gets no answer and is
// unknown, and RestartProcess starts a fresh process, which knows nothing
// of what the killed one held.
func TestKillProcess(t *testing.T) {
	var buf syncBuffer
	l := start(t, "ok", WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	if _, err := l.Acquire(ctxFor(t, 5*time.Second), "a", "o1"); err != nil {
		t.Fatal(err)
	}
	old := l.Process()
	child, err := strconv.Atoi(answer(t, l, "child"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := l.Acquire(ctxFor(t, 30*time.Second), "silent", "o1"); done <- err }()
	// The kill lands once the plug-in has read the request (it says so on
	// stderr): an acquire in flight, not one not yet sent.
	for inFlight := ctxFor(t, 30*time.Second); !strings.Contains(buf.String(), "fake: silent request read"); {
		select {
		case <-inFlight.Done():
			t.Fatal("the plug-in never read the acquire")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := l.KillProcess(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, workload.ErrUnknown) {
		t.Errorf("the acquire in flight: %v, want unknown", err)
	}
	// SIGKILL is delivered at once, but a loaded machine can take a moment
	// to run the exit: wait for it (bounded), do not race it.
	for _, pid := range []int{old, child} {
		for gone := ctxFor(t, 10*time.Second); alive(pid) && procStateOK(pid) != "Z"; {
			select {
			case <-gone.Done():
				t.Errorf("process %d alive 10 s after the kill", pid)
			case <-time.After(20 * time.Millisecond):
				continue
			}
			break
		}
	}
	if l.Process() != 0 {
		t.Errorf("process %d after the kill, want none until the restart", l.Process())
	}
	if err := l.RestartProcess(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	fresh := l.Process()
	if fresh == 0 || fresh == old || !alive(fresh) {
		t.Fatalf("fresh process %d (killed %d)", fresh, old)
	}
	// The fresh process is a new instance: the killed one's hold is not
	// its to know, and the fake's table is per process.
	if _, err := l.Acquire(ctxFor(t, 5*time.Second), "a", "o2"); err != nil {
		t.Errorf("the fresh process's acquire: %v", err)
	}
	if err := l.KillProcess(); err != nil {
		t.Fatal(err)
	}
	if err := l.KillProcess(); err == nil {
		t.Error("a second kill with no process running: no error")
	}
}
