package lazyfs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkWrite measures writes, each followed by an fsync or not, straight
// into a directory and through a lazy mount over one. The lazy mount's fsync
// writes into the backing file without fsyncing it (a power loss is this
// process's death, not the host's), so "fsync" compares durability costs as
// each side defines them.
func BenchmarkWrite(b *testing.B) {
	const span = 64 << 20 // offsets wrap here so the file stays bounded
	for _, target := range []string{"dir", "lazyfs"} {
		for _, sync := range []bool{false, true} {
			for _, size := range []int{4 << 10, 64 << 10} {
				name := fmt.Sprintf("%s/fsync=%v/%dKiB", target, sync, size>>10)
				b.Run(name, func(b *testing.B) {
					dir := b.TempDir()
					if target == "lazyfs" {
						dir = benchMount(b)
					}
					f, err := os.Create(filepath.Join(dir, "data"))
					if err != nil {
						b.Fatal(err)
					}
					defer f.Close()
					buf := make([]byte, size)
					b.SetBytes(int64(size))
					var off int64
					for b.Loop() {
						if _, err := f.WriteAt(buf, off); err != nil {
							b.Fatal(err)
						}
						if sync {
							if err := f.Sync(); err != nil {
								b.Fatal(err)
							}
						}
						off = (off + int64(size)) % span
					}
				})
			}
		}
	}
}

// benchMount mounts a lazy filesystem over a fresh directory for a benchmark.
func benchMount(b *testing.B) string {
	b.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		b.Skip("FUSE needs /dev/fuse and root here")
	}
	dir := b.TempDir()
	_, srv, err := Mount(b.TempDir(), dir)
	if err != nil {
		b.Skipf("cannot mount FUSE here: %v", err)
	}
	b.Cleanup(func() { srv.Unmount() })
	return dir
}
