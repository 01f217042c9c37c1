package lazyfs

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const mapWriteEnv = "LAZYFS_TEST_MAP_WRITE"

// TestMain is also the child process of mapWrite.
func TestMain(m *testing.M) {
	if arg, ok := os.LookupEnv(mapWriteEnv); ok {
		var w mapWriteArgs
		err := json.Unmarshal([]byte(arg), &w)
		if err == nil {
			err = w.do()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type mapWriteArgs struct {
	Path  string
	Off   int
	Data  string
	Msync bool
}

// mapWrite writes data at off through a shared mapping of path, msyncing it
// if asked (munmap alone writes nothing back). A child process does it: a
// page fault on a mount served by this very process holds its mmap lock while
// the fault waits for a READ this process must answer, and the Go runtime's
// next mmap then hangs the whole process in the kernel, unkillable.
func mapWrite(t *testing.T, path string, off int, data string, msync bool) {
	t.Helper()
	arg, _ := json.Marshal(mapWriteArgs{path, off, data, msync})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), mapWriteEnv+"="+string(arg))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mapping writer: %v: %s", err, out)
	}
}

func (w mapWriteArgs) do() error {
	f, err := os.OpenFile(w.Path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	copy(m[w.Off:], w.Data)
	if w.Msync {
		if err := unix.Msync(m, unix.MS_SYNC); err != nil {
			return err
		}
	}
	return unix.Munmap(m)
}

// A node whose JVM died is written out (SIGUSR1): the pages its mapping left
// dirty in the kernel, never msynced, are kept too.
func TestMountedWriteOutKeepsDirtyMapping(t *testing.T) {
	fs, srv, mnt, backing := mounted(t)
	if err := os.WriteFile(filepath.Join(mnt, "segment"), make([]byte, 2*PageSize), 0o644); err != nil {
		t.Fatal(err)
	}
	mapWrite(t, filepath.Join(mnt, "segment"), PageSize+1, "never msynced", false)
	if err := fs.WriteOut(mnt); err != nil {
		t.Fatal(err)
	}
	crash(t, srv)
	if got := backed(t, filepath.Join(backing, "segment")); got[PageSize+1:PageSize+14] != "never msynced" {
		t.Errorf("after WriteOut and a power loss the segment holds %q", got[PageSize+1:PageSize+14])
	}
}

// A listing (READDIRPLUS) and a statx asking for the birth time (FUSE_STATX)
// report the written size, not the backing's: a smaller size would cut the
// kernel's view of the file.
func TestMountedListingAndStatxSize(t *testing.T) {
	_, _, mnt, _ := mounted(t)
	data := strings.Repeat("x", 3*PageSize+5)
	if err := os.WriteFile(filepath.Join(mnt, "f"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(mnt)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() != int64(len(data)) {
			t.Errorf("listing: %s is %d bytes, want %d", e.Name(), info.Size(), len(data))
		}
	}
	var x unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, filepath.Join(mnt, "f"), unix.AT_STATX_FORCE_SYNC, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &x); err != nil {
		t.Fatal(err)
	}
	if x.Size != uint64(len(data)) {
		t.Errorf("statx: %d bytes, want %d", x.Size, len(data))
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "f")); err != nil || string(got) != data {
		t.Errorf("read back %d bytes (%v), want %d", len(got), err, len(data))
	}
}
