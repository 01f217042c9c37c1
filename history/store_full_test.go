package history

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// smallFS mounts a tmpfs of size bytes for the test: the store a long
// campaign fills up, made small.
func smallFS(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("mounting a small tmpfs needs root (CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// fill writes a file in dir until the filesystem refuses more.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatalf("filling the store: %v", err)
			}
			return
		}
	}
}

func readAll(t *testing.T, path string) ([]Op, *Reader) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := NewReader(f)
	var ops []Op
	for {
		op, err := r.Next()
		if err == io.EOF {
			return ops, r
		}
		if err != nil {
			t.Fatalf("the history left on the full store does not read: %v", err)
		}
		ops = append(ops, op)
	}
}

// appendFlushed appends n lines and flushes them to the file.
func appendFlushed(t *testing.T, w *Writer, n int) {
	t.Helper()
	for range n {
		if _, err := w.Append(infoOp()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

func infoOp() Op {
	return Op{Process: NemesisProcess, Type: Info, F: "note", Value: []byte(`"a line of some length to fill the store faster"`)}
}

// A store that fills up mid-run: the writer says so once, and every line
// appended, before and after it said so, is in the file (the space set
// aside takes the lines of the run's stop).
func TestWriterStoreFillsUp(t *testing.T) {
	dir := smallFS(t, "2m")
	path := filepath.Join(dir, "history.jsonl")
	var calls atomic.Int32
	var cause atomic.Value
	w, err := Create(path, WithReserve(64<<10), WithFlushInterval(0), WithOnFull(func(err error) {
		calls.Add(1)
		cause.Store(err)
	}))
	if err != nil {
		t.Fatal(err)
	}
	appendFlushed(t, w, 100)
	fill(t, dir)
	// Append until the writer says the store is full, then as many lines
	// again as a stop and heal write.
	after := -1
	for i := 0; i < 100000 && after < 200; i++ {
		if _, err := w.Append(infoOp()); err != nil {
			t.Fatalf("append %d (%d after the store said full): %v", i, after, err)
		}
		if i%50 == 0 {
			if err := w.Flush(); err != nil {
				t.Fatalf("flush after %d lines past full: %v", after, err)
			}
		}
		if calls.Load() > 0 {
			after++
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("told %d times that the store is full, want once", calls.Load())
	}
	if c, _ := cause.Load().(error); !errors.Is(c, unix.ENOSPC) {
		t.Errorf("cause %v, want ENOSPC", c)
	}
	n := w.Len()
	if err := w.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	ops, r := readAll(t, path)
	if int64(len(ops)) != n || r.Truncated() {
		t.Fatalf("%d lines read back of %d appended (truncated %v): lines were lost", len(ops), n, r.Truncated())
	}
	// The space set aside past the last line is given back.
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if used := st.Blocks * 512; used > st.Size+8192 {
		t.Errorf("the history keeps %d bytes for %d of lines: the space set aside was not given back", used, st.Size)
	}
}

// readOnlyLater mounts a small ext4 filesystem (a loop device) that the
// test can turn read-only while files are open for writing, as ext4 does
// itself on an error with errors=remount-ro; it returns the mount point and
// the function that turns it read-only.
func readOnlyLater(t *testing.T) (string, func()) {
	t.Helper()
	for _, tool := range []string{"mkfs.ext4", "losetup"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	img := filepath.Join(t.TempDir(), "store.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 32<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	out, err := exec.Command("losetup", "--find", "--show", img).Output()
	if err != nil {
		t.Skipf("no loop device (losetup needs root): %v", err)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	dir := t.TempDir()
	if err := unix.Mount(dev, dir, "ext4", 0, "errors=remount-ro"); err != nil {
		t.Skipf("mount %s: %v", dev, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir, func() {
		// ext4's abort: the filesystem errs and remounts itself read-only.
		if err := unix.Mount("", dir, "", unix.MS_REMOUNT, "abort"); err != nil {
			t.Fatalf("turn %s read-only: %v", dir, err)
		}
	}
}

// A store that turns read-only mid-run: the writer says so, and what
// reached the file before reads back as a history.
func TestWriterStoreTurnsReadOnly(t *testing.T) {
	dir, readOnly := readOnlyLater(t)
	path := filepath.Join(dir, "history.jsonl")
	full := make(chan error, 1)
	w, err := Create(path, WithFlushInterval(0), WithOnFull(func(err error) { full <- err }))
	if err != nil {
		t.Fatal(err)
	}
	appendFlushed(t, w, 100)
	readOnly()
	for range 10 {
		_, _ = w.Append(infoOp())
	}
	if err := w.Flush(); err == nil {
		t.Fatal("a flush to a read-only store reported no error")
	}
	select {
	case err := <-full:
		if !errors.Is(err, unix.EROFS) {
			t.Errorf("cause %v, want EROFS", err)
		}
	default:
		t.Fatal("the writer did not say the store can take no more")
	}
	if _, err := w.Append(infoOp()); err == nil {
		t.Error("an append after the failure reported no error")
	}
	_ = w.Close()
	ops, _ := readAll(t, path)
	if len(ops) < 100 {
		t.Fatalf("%d lines read back: the 100 flushed before the store turned read-only were lost", len(ops))
	}
}
