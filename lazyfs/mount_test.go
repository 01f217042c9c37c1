package lazyfs

import (
	"os"
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
func TestMountedMmap(t *testing.T) {
	_, srv, mnt, backing := mounted(t)
	f, err := os.OpenFile(filepath.Join(mnt, "segment"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	const size = 3 * PageSize
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	mapWrite(t, filepath.Join(mnt, "segment"), 0, "synced", true)
	mapWrite(t, filepath.Join(mnt, "segment"), 2*PageSize, "not synced", false)
	crash(t, srv)
	got := backed(t, filepath.Join(backing, "segment"))
	if len(got) != size {
		t.Fatalf("segment is %d bytes, want %d (the truncate is durable)", len(got), size)
	}
	if got[:6] != "synced" {
		t.Errorf("msynced page lost: %q", got[:6])
	}
	if got[2*PageSize:2*PageSize+10] != string(make([]byte, 10)) {
		t.Errorf("unsynced page survived: %q", got[2*PageSize:2*PageSize+10])
	}
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
