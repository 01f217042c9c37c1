package lazyfs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// mounted mounts a fresh lazy filesystem; the test skips where FUSE cannot
// mount (no /dev/fuse, not root).
func mounted(t *testing.T) (fs *FS, srv *fuse.Server, mnt, backing string) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Skip("FUSE needs /dev/fuse and root here")
	}
	dir := t.TempDir()
	mnt, backing = filepath.Join(dir, "mnt"), filepath.Join(dir, "backing")
	for _, d := range []string{mnt, backing} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fs, srv, err := Mount(backing, mnt)
	if err != nil {
		t.Skipf("cannot mount FUSE here: %v", err)
	}
	t.Cleanup(func() { srv.Unmount() })
	return fs, srv, mnt, backing
}

// crash ends the filesystem without writing anything out: what a power
// loss leaves is the backing directory. The kernel's own dirty pages
// (mmap) reach the filesystem at unmount and die with it.
func crash(t *testing.T, srv *fuse.Server) {
	t.Helper()
	if err := srv.Unmount(); err != nil {
		t.Fatalf("unmount: %v", err)
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

func TestMountedPowerLoss(t *testing.T) {
	_, srv, mnt, backing := mounted(t)
	write := func(name, data string, sync func(*os.File) error) {
		f, err := os.OpenFile(filepath.Join(mnt, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(data); err != nil {
			t.Fatal(err)
		}
		if sync != nil {
			if err := sync(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	fdatasync := func(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
	write("lost", "never synced", nil)
	write("fsynced", "kept", (*os.File).Sync)
	write("fdatasynced", "kept too", fdatasync)
	write("half", "first;", (*os.File).Sync)
	write("half", "second", nil)
	// A rename moves the unsynced data with the inode; fsync under the new
	// name makes it durable there.
	write("old", "renamed then synced", nil)
	if err := os.Rename(filepath.Join(mnt, "old"), filepath.Join(mnt, "new")); err != nil {
		t.Fatal(err)
	}
	write("new", "!", (*os.File).Sync)
	// Truncate is metadata: durable at once.
	write("cut", "abcdef", (*os.File).Sync)
	if err := os.Truncate(filepath.Join(mnt, "cut"), 3); err != nil {
		t.Fatal(err)
	}
	// Reads see what was written, synced or not.
	for name, want := range map[string]string{"lost": "never synced", "half": "first;second", "new": "renamed then synced!", "cut": "abc"} {
		if got := backed(t, filepath.Join(mnt, name)); got != want {
			t.Errorf("read %s through the mount: %q, want %q", name, got, want)
		}
	}
	crash(t, srv)
	for name, want := range map[string]string{
		"lost": "", "fsynced": "kept", "fdatasynced": "kept too", "half": "first;",
		"new": "renamed then synced!", "cut": "abc",
	} {
		if got := backed(t, filepath.Join(backing, name)); got != want {
			t.Errorf("after the power loss %s holds %q, want %q", name, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(backing, "old")); !os.IsNotExist(err) {
		t.Errorf("the rename did not reach the backing: %v", err)
	}
}

// Cassandra's commitlog writes through a shared mapping and syncs it with
// msync (MappedByteBuffer.force): what was msynced survives, the rest not.
// The mapping is written by a child process: a page fault on our own mount
// in this process could stop the world while the server that must answer
// it waits for the garbage collector.
func TestMountedMmap(t *testing.T) {
	_, srv, mnt, backing := mounted(t)
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "LAZYFS_MMAP_CHILD="+filepath.Join(mnt, "segment"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mmap child: %v: %s", err, out)
	}
	crash(t, srv)
	got := backed(t, filepath.Join(backing, "segment"))
	if len(got) != mmapSize {
		t.Fatalf("segment is %d bytes, want %d (the truncate is durable)", len(got), mmapSize)
	}
	if got[:6] != "synced" {
		t.Errorf("msynced page lost: %q", got[:6])
	}
	if got[2*PageSize:2*PageSize+10] != string(make([]byte, 10)) {
		t.Errorf("unsynced page survived: %q", got[2*PageSize:2*PageSize+10])
	}
}

const mmapSize = 3 * PageSize

// TestMain is also the mmap child of TestMountedMmap.
func TestMain(m *testing.M) {
	if path := os.Getenv("LAZYFS_MMAP_CHILD"); path != "" {
		if err := mmapWrites(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// mmapWrites writes a page through a shared mapping and msyncs it, then
// writes another and unmaps without a sync.
func mmapWrites(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(mmapSize); err != nil {
		return err
	}
	m, err := unix.Mmap(int(f.Fd()), 0, mmapSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	copy(m, "synced")
	if err := unix.Msync(m, unix.MS_SYNC); err != nil {
		return err
	}
	copy(m[2*PageSize:], "not synced")
	return unix.Munmap(m)
}

// Writing everything out (a clean shutdown, or the process above crashing)
// keeps everything; an unlinked file's unsynced data is dropped with it.
func TestMountedSyncAll(t *testing.T) {
	fs, srv, mnt, backing := mounted(t)
	for name, data := range map[string]string{"a": "alpha", "gone": "deleted before any sync"} {
		if err := os.WriteFile(filepath.Join(mnt, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if s := fs.Status(); s.UnsyncedFiles != 2 || s.UnsyncedBytes != 2*PageSize {
		t.Errorf("status %+v, want 2 files of a page each unsynced", s)
	}
	if err := os.Remove(filepath.Join(mnt, "gone")); err != nil {
		t.Fatal(err)
	}
	if s := fs.Status(); s.UnsyncedFiles != 1 {
		t.Errorf("status %+v after the unlink, want 1 file unsynced", s)
	}
	if err := fs.SyncAll(); err != nil {
		t.Fatal(err)
	}
	if s := fs.Status(); s.UnsyncedBytes != 0 {
		t.Errorf("status %+v after writing out, want nothing unsynced", s)
	}
	crash(t, srv)
	if got := backed(t, filepath.Join(backing, "a")); got != "alpha" {
		t.Errorf("a holds %q after writing out, want alpha", got)
	}
}
