package lazyfs

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestPagesRandom runs random sequences of writes of any size anywhere,
// truncates (shrinking and extending) and syncs on a file over a real backing
// file, some starting from synced content, against a reference kept as two
// plain slices: what the application sees and what a power loss leaves. After
// every step the file reads as the first at every offset, and the backing
// holds exactly the second.
func TestPagesRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 1))
	for seq := range 40 {
		backing, err := os.Create(filepath.Join(t.TempDir(), "backing"))
		if err != nil {
			t.Fatal(err)
		}
		var initial []byte
		if seq%2 == 1 {
			initial = bytes.Repeat([]byte{'i'}, rng.IntN(3*PageSize))
			if _, err := backing.Write(initial); err != nil {
				t.Fatal(err)
			}
		}
		f := newFile(backing, int64(len(initial)))
		view, durable := bytes.Clone(initial), bytes.Clone(initial)
		for i := range 30 {
			switch k := rng.IntN(10); {
			case k < 6:
				data := make([]byte, 1+rng.IntN(2*PageSize))
				for j := range data {
					data[j] = byte('a' + rng.IntN(26))
				}
				off := rng.Int64N(4 * PageSize)
				if _, err := f.WriteAt(data, off); err != nil {
					t.Fatal(err)
				}
				if end := off + int64(len(data)); end > int64(len(view)) {
					view = resized(view, end)
				}
				copy(view[off:], data)
			case k < 8:
				n := rng.Int64N(5 * PageSize)
				if err := f.Truncate(n); err != nil {
					t.Fatal(err)
				}
				view, durable = resized(view, n), resized(durable, n)
			default:
				if _, err := f.Sync(); err != nil {
					t.Fatal(err)
				}
				durable = bytes.Clone(view)
			}
			checkFile(t, seq, i, f, backing, view, durable)
		}
		backing.Close()
	}
}

func resized(b []byte, n int64) []byte {
	if int64(len(b)) >= n {
		return bytes.Clone(b[:n])
	}
	return append(bytes.Clone(b), make([]byte, n-int64(len(b)))...)
}

func checkFile(t *testing.T, seq, step int, f *file, backing *os.File, view, durable []byte) {
	t.Helper()
	if f.Size() != int64(len(view)) {
		t.Fatalf("seq %d step %d: size %d, want %d", seq, step, f.Size(), len(view))
	}
	for _, off := range []int64{0, 1, PageSize - 1, PageSize, PageSize + 1, 2*PageSize - 3, 3 * PageSize} {
		for _, l := range []int{1, 7, PageSize, 5 * PageSize} {
			if off >= int64(len(view)) {
				continue
			}
			buf := make([]byte, l)
			n, err := f.ReadAt(buf, off)
			want := view[off:min(off+int64(l), int64(len(view)))]
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("seq %d step %d: ReadAt(%d, %d): %v", seq, step, off, l, err)
			}
			if !bytes.Equal(buf[:n], want) {
				t.Fatalf("seq %d step %d: ReadAt(%d, %d) = %d bytes differing from the %d written", seq, step, off, l, n, len(want))
			}
		}
	}
	disk, err := os.ReadFile(backing.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(disk, durable) {
		t.Fatalf("seq %d step %d: the backing (what a power loss leaves) holds %d bytes differing from the %d synced", seq, step, len(disk), len(durable))
	}
}
