package lazyfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// writeAt writes data at off into path, creating it, and syncs it if asked.
func writeAt(t *testing.T, path string, off int64, data string, sync func(*os.File) error) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte(data), off); err != nil {
		t.Fatal(err)
	}
	if sync != nil {
		if err := sync(f); err != nil {
			t.Fatal(err)
		}
	}
}

func fsync(f *os.File) error     { return f.Sync() }
func fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

func zeros(n int) string { return string(make([]byte, n)) }

// regular reads every regular file under dir, by relative name.
func regular(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestMountedPowerLossTable acts on a mount, loses power, and checks that the
// backing holds exactly the synced state and that a fresh mount over it
// serves the same.
func TestMountedPowerLossTable(t *testing.T) {
	tests := []struct {
		name string
		act  func(t *testing.T, fs *FS, mnt string)
		want map[string]string // the backing's regular files after the loss
	}{
		{"an fdatasynced write is kept", func(t *testing.T, fs *FS, mnt string) {
			writeAt(t, filepath.Join(mnt, "a"), 0, "data", fdatasync)
		}, map[string]string{"a": "data"}},
		{"close makes nothing durable; only what followed the last fsync is lost", func(t *testing.T, fs *FS, mnt string) {
			writeAt(t, filepath.Join(mnt, "a"), 0, "one", fsync)
			writeAt(t, filepath.Join(mnt, "a"), 0, "TWO", fsync)
			writeAt(t, filepath.Join(mnt, "a"), 1, "xx", nil)
		}, map[string]string{"a": "TWO"}},
		{"a partial page over synced data keeps the synced bytes around it", func(t *testing.T, fs *FS, mnt string) {
			writeAt(t, filepath.Join(mnt, "a"), 0, "0123456789", fsync)
			writeAt(t, filepath.Join(mnt, "a"), 3, "ab", fsync)
			writeAt(t, filepath.Join(mnt, "a"), 6, "cd", nil)
		}, map[string]string{"a": "012ab56789"}},
		{"rename then fsync of the renamed file keeps the data under the new name", func(t *testing.T, fs *FS, mnt string) {
			writeAt(t, filepath.Join(mnt, "tmp"), 0, "data", nil)
			must(t, os.Rename(filepath.Join(mnt, "tmp"), filepath.Join(mnt, "final")))
			f, err := os.Open(filepath.Join(mnt, "final"))
			must(t, err)
			defer f.Close()
			must(t, f.Sync())
		}, map[string]string{"final": "data"}},
		{"fsync through a second hard link", func(t *testing.T, fs *FS, mnt string) {
			writeAt(t, filepath.Join(mnt, "a"), 0, "data", nil)
			must(t, os.Link(filepath.Join(mnt, "a"), filepath.Join(mnt, "b")))
			writeAt(t, filepath.Join(mnt, "b"), 4, "!", fsync)
		}, map[string]string{"a": "data!", "b": "data!"}},
		{"truncate cuts unsynced data and extends with zeros", func(t *testing.T, fs *FS, mnt string) {
			writeAt(t, filepath.Join(mnt, "a"), 0, "abcdefgh", nil)
			must(t, os.Truncate(filepath.Join(mnt, "a"), 3))
			must(t, os.Truncate(filepath.Join(mnt, "a"), 6))
			writeAt(t, filepath.Join(mnt, "a"), 0, "", fsync)
		}, map[string]string{"a": "abc" + zeros(3)}},
		{"ftruncate shrinks the backing at once", func(t *testing.T, fs *FS, mnt string) {
			writeAt(t, filepath.Join(mnt, "a"), 0, "abcdefgh", fsync)
			f, err := os.OpenFile(filepath.Join(mnt, "a"), os.O_RDWR, 0)
			must(t, err)
			defer f.Close()
			must(t, f.Truncate(3))
			_, err = f.WriteAt([]byte("XY"), 3)
			must(t, err)
		}, map[string]string{"a": "abc"}},
		{"O_TRUNC open of a file with unsynced data", func(t *testing.T, fs *FS, mnt string) {
			writeAt(t, filepath.Join(mnt, "a"), 0, "old synced", fsync)
			writeAt(t, filepath.Join(mnt, "a"), 0, "unsynced", nil)
			f, err := os.OpenFile(filepath.Join(mnt, "a"), os.O_WRONLY|os.O_TRUNC, 0)
			must(t, err)
			_, err = f.Write([]byte("new"))
			must(t, err)
			must(t, f.Sync())
			must(t, f.Close())
		}, map[string]string{"a": "new"}},
		{"directories, names, links and modes are durable at once", func(t *testing.T, fs *FS, mnt string) {
			must(t, os.MkdirAll(filepath.Join(mnt, "d/e"), 0o755))
			writeAt(t, filepath.Join(mnt, "d/e/f"), 0, "x", nil)
			must(t, os.Symlink("f", filepath.Join(mnt, "d/e/l")))
			must(t, os.Chmod(filepath.Join(mnt, "d/e/f"), 0o600))
			d, err := os.Open(filepath.Join(mnt, "d/e"))
			must(t, err)
			defer d.Close()
			must(t, d.Sync()) // a directory's fsync is accepted
		}, map[string]string{"d/e/f": ""}},
		{"a rename over a file drops the replaced file's unsynced data", func(t *testing.T, fs *FS, mnt string) {
			writeAt(t, filepath.Join(mnt, "old"), 0, "old data", nil)
			writeAt(t, filepath.Join(mnt, "new"), 0, "new", fsync)
			must(t, os.Rename(filepath.Join(mnt, "new"), filepath.Join(mnt, "old")))
			if s := fs.Status(); s.UnsyncedFiles != 0 {
				t.Errorf("after the rename: %+v, want nothing unsynced", s)
			}
		}, map[string]string{"old": "new"}},
		{"fallocate extends at once", func(t *testing.T, fs *FS, mnt string) {
			f, err := os.Create(filepath.Join(mnt, "a"))
			must(t, err)
			defer f.Close()
			_, err = f.Write([]byte("unsynced"))
			must(t, err)
			must(t, unix.Fallocate(int(f.Fd()), 0, 0, 16))
			if st, err := f.Stat(); err != nil || st.Size() != 16 {
				t.Errorf("size after fallocate: %v %v, want 16", st.Size(), err)
			}
		}, map[string]string{"a": zeros(16)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, srv, mnt, backing := mounted(t)
			tt.act(t, fs, mnt)
			crash(t, srv)
			got := regular(t, backing)
			if len(got) != len(tt.want) {
				t.Fatalf("backing after the loss: %q, want %q", got, tt.want)
			}
			for name, want := range tt.want {
				if got[name] != want {
					t.Fatalf("backing %s after the loss: %q, want %q", name, got[name], want)
				}
			}
			// A fresh mount over the backing serves exactly what it holds.
			again := t.TempDir()
			_, srv2, err := Mount(backing, again)
			must(t, err)
			defer srv2.Unmount()
			view := regular(t, again)
			for name := range got {
				if view[name] != got[name] {
					t.Fatalf("fresh mount %s: %q, want %q", name, view[name], got[name])
				}
			}
		})
	}
}

// The application reads what it wrote past the kernel's cache, and
// SEEK_DATA/SEEK_HOLE see the written size.
func TestMountedApplicationView(t *testing.T) {
	_, _, mnt, _ := mounted(t)
	p := filepath.Join(mnt, "f")
	writeAt(t, p, 0, "synced", fsync)
	writeAt(t, p, 2*PageSize, "tail", nil)
	f, err := os.Open(p)
	must(t, err)
	defer f.Close()
	must(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)) // the next read reaches the filesystem
	b, err := os.ReadFile(p)
	must(t, err)
	if want := "synced" + zeros(2*PageSize-6) + "tail"; string(b) != want {
		t.Fatalf("read %d bytes, want %d", len(b), len(want))
	}
	off, err := unix.Seek(int(f.Fd()), PageSize, unix.SEEK_DATA)
	if err != nil && !errors.Is(err, unix.ENXIO) {
		t.Fatal(err)
	}
	if err != nil || off > 2*PageSize {
		t.Errorf("SEEK_DATA from page 1: %d, %v; want data at or before the unsynced tail at %d", off, err, 2*PageSize)
	}
	if end, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_HOLE); err != nil || end != 2*PageSize+4 {
		t.Errorf("SEEK_HOLE: %d, %v; want the written end %d", end, err, 2*PageSize+4)
	}
}
