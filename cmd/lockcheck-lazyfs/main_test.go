package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/lazyfs"
	"golang.org/x/sys/unix"
)

// The test binary is the command when this is set: the signal tests run it
// as a process of its own, as a node runs it.
func TestMain(m *testing.M) {
	if os.Getenv("LOCKCHECK_LAZYFS_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stderr))
	}
	os.Exit(m.Run())
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"--backing", "/tmp"}, {"--mount", "/tmp"}, {"--backing", "a", "--mount", "b", "extra"}, {"--bogus"}} {
		var stderr bytes.Buffer
		if code := run(args, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
		if !strings.Contains(stderr.String(), "usage") && !strings.Contains(stderr.String(), "flag provided but not defined") {
			t.Errorf("%q: stderr %q", args, stderr.String())
		}
	}
}

type mount struct {
	cmd                           *exec.Cmd
	dir, backing, status, latency string
	done                          chan error
}

func start(t *testing.T) *mount {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Skip("FUSE needs /dev/fuse and root here")
	}
	d := t.TempDir()
	m := &mount{dir: filepath.Join(d, "mnt"), backing: filepath.Join(d, "disk"), status: filepath.Join(d, "status"),
		latency: filepath.Join(d, "latency"), done: make(chan error, 1)}
	m.cmd = exec.Command(os.Args[0], "--backing", m.backing, "--mount", m.dir, "--status", m.status, "--latency-file", m.latency)
	m.cmd.Env = append(os.Environ(), "LOCKCHECK_LAZYFS_MAIN=1")
	stderr, err := m.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	if !sc.Scan() || !strings.Contains(sc.Text(), "mounted") {
		m.cmd.Process.Kill()
		t.Skipf("cannot mount FUSE here: %q", sc.Text())
	}
	go func() {
		for sc.Scan() {
			t.Log(sc.Text())
		}
		m.done <- m.cmd.Wait()
	}()
	t.Cleanup(func() {
		m.cmd.Process.Kill()
		syscall.Unmount(m.dir, syscall.MNT_DETACH)
	})
	return m
}

func (m *mount) write(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(m.dir, name), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (m *mount) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-m.done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("lockcheck-lazyfs did not exit")
		return nil
	}
}

func backed(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// SIGKILL is a power loss: what was not synced is gone. SIGUSR1 writes
// everything out first, and the status file says what was held.
func TestKillLosesUnsynced(t *testing.T) {
	m := start(t)
	m.write(t, "early", "written out by SIGUSR1")
	var st lazyfs.Status
	deadline := time.Now().Add(5 * time.Second)
	for st.UnsyncedFiles != 1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if b, err := os.ReadFile(m.status); err == nil {
			json.Unmarshal(b, &st)
		}
	}
	if st.UnsyncedFiles != 1 || st.UnsyncedBytes != lazyfs.PageSize {
		t.Errorf("status %+v, want one page of one file unsynced", st)
	}
	m.cmd.Process.Signal(syscall.SIGUSR1)
	deadline = time.Now().Add(5 * time.Second)
	for backed(t, filepath.Join(m.backing, "early")) == "" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	m.write(t, "late", "lost with the power")
	m.cmd.Process.Signal(syscall.SIGKILL)
	m.wait(t)
	syscall.Unmount(m.dir, syscall.MNT_DETACH)
	if got := backed(t, filepath.Join(m.backing, "early")); got != "written out by SIGUSR1" {
		t.Errorf("early holds %q", got)
	}
	if got := backed(t, filepath.Join(m.backing, "late")); got != "" {
		t.Errorf("late holds %q after the power loss, want nothing", got)
	}
}

// SIGTERM is a clean shutdown: everything written out, unmounted, exit 0.
func TestTermWritesOut(t *testing.T) {
	m := start(t)
	m.write(t, "a", "kept at shutdown")
	m.cmd.Process.Signal(syscall.SIGTERM)
	if err := m.wait(t); err != nil {
		t.Errorf("exit: %v", err)
	}
	if got := backed(t, filepath.Join(m.backing, "a")); got != "kept at shutdown" {
		t.Errorf("a holds %q", got)
	}
	if b, _ := os.ReadFile("/proc/mounts"); strings.Contains(string(b), m.dir) {
		t.Error("still mounted after SIGTERM")
	}
}

// SIGTERM while a process still maps a file with pages it never msynced (the
// kernel holds them dirty): they are written out too, as a clean shutdown
// writes back the page cache.
func TestTermWritesOutLiveMapping(t *testing.T) {
	m := start(t)
	m.write(t, "segment", string(make([]byte, 2*lazyfs.PageSize)))
	f, err := os.OpenFile(filepath.Join(m.dir, "segment"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mem, err := unix.Mmap(int(f.Fd()), 0, 2*lazyfs.PageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	copy(mem[lazyfs.PageSize:], "mapped, never msynced")
	m.cmd.Process.Signal(syscall.SIGTERM)
	if err := m.wait(t); err != nil {
		t.Errorf("exit: %v", err)
	}
	got := backed(t, filepath.Join(m.backing, "segment"))
	if len(got) != 2*lazyfs.PageSize || got[lazyfs.PageSize:lazyfs.PageSize+21] != "mapped, never msynced" {
		t.Errorf("segment after SIGTERM: %d bytes, page 2 starts %q", len(got), got[lazyfs.PageSize:min(len(got), lazyfs.PageSize+21)])
	}
}

// statusUntil reads the status file until ok says yes (or fails the test).
func (m *mount) statusUntil(t *testing.T, ok func(lazyfs.Status) bool) lazyfs.Status {
	t.Helper()
	var st lazyfs.Status
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(m.status); err == nil && json.Unmarshal(b, &st) == nil && ok(st) {
			return st
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("status never came: last %+v", st)
	return st
}

// The latency file slows every fsync by its latency (slow-disk), the status
// says so, and 0 lifts it.
func TestLatencyFileSlowsFsync(t *testing.T) {
	m := start(t)
	fsync := func() time.Duration {
		f, err := os.OpenFile(filepath.Join(m.dir, "commitlog"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		began := time.Now()
		if _, err := f.WriteString("a mutation\n"); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		return time.Since(began)
	}
	if err := os.WriteFile(m.latency, []byte("300ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m.statusUntil(t, func(s lazyfs.Status) bool { return s.LatencyMS == 300 })
	// A write and its fsync each wait the latency: a lower bound only.
	if took := fsync(); took < 600*time.Millisecond {
		t.Errorf("a write and an fsync took %v under a 300ms latency, want at least 600ms", took)
	}
	if got := backed(t, filepath.Join(m.backing, "commitlog")); got != "a mutation\n" {
		t.Errorf("synced %q", got)
	}
	if err := os.WriteFile(m.latency, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m.statusUntil(t, func(s lazyfs.Status) bool { return s.LatencyMS == 0 })
}

func TestReadLatency(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		text string
		want time.Duration
		bad  bool
	}{
		{"", 0, false}, {"0", 0, false}, {"150ms\n", 150 * time.Millisecond, false}, {" 2s ", 2 * time.Second, false},
		{"-5ms", 0, true}, {"fast", 0, true}, {"150", 0, true},
	} {
		path := filepath.Join(dir, "latency")
		if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := readLatency(path)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("%q: %v, %v; want %v (bad %v)", tc.text, got, err, tc.want, tc.bad)
		}
	}
	if got, err := readLatency(filepath.Join(dir, "none")); got != 0 || err != nil {
		t.Errorf("no file: %v, %v", got, err)
	}
}
