package lazyfs

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
)

// memBacking is a durable file in memory: what survives a power loss.
type memBacking struct{ b []byte }

func (m *memBacking) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(m.b)) {
		return 0, io.EOF
	}
	n := copy(p, m.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m *memBacking) WriteAt(p []byte, off int64) (int, error) {
	if end := off + int64(len(p)); end > int64(len(m.b)) {
		m.b = append(m.b, make([]byte, end-int64(len(m.b)))...)
	}
	return copy(m.b[off:], p), nil
}

func (m *memBacking) Truncate(size int64) error {
	if size <= int64(len(m.b)) {
		m.b = m.b[:size]
	} else {
		m.b = append(m.b, make([]byte, size-int64(len(m.b)))...)
	}
	return nil
}

// step is one operation on a file; the model is a plain byte slice that
// every operation applies at once (what the application sees), and the
// durable slice that only syncs and truncates change.
type step struct {
	op   string // write, sync, truncate
	off  int64
	data string
}

func TestPages(t *testing.T) {
	long := string(bytes.Repeat([]byte("x"), PageSize+100))
	for _, tc := range []struct {
		name    string
		initial string // the backing's content before
		steps   []step
		seen    string // what reads return at the end
		durable string // what the backing holds at the end (after a power loss)
	}{
		{"unsynced write is lost", "", []step{{op: "write", data: "hello"}}, "hello", ""},
		{"synced write is kept", "", []step{{op: "write", data: "hello"}, {op: "sync"}}, "hello", "hello"},
		{"only what came before the sync", "", []step{{op: "write", data: "ab"}, {op: "sync"}, {op: "write", off: 2, data: "cd"}}, "abcd", "ab"},
		{"overwrite inside synced data is lost", "abcdef", []step{{op: "write", off: 2, data: "XY"}}, "abXYef", "abcdef"},
		{"partial page keeps the backing's rest", "abcdef", []step{{op: "write", off: 1, data: "Z"}, {op: "sync"}}, "aZcdef", "aZcdef"},
		{"overlapping writes, the last wins", "", []step{{op: "write", data: "aaaa"}, {op: "write", off: 2, data: "bbbb"}, {op: "sync"}}, "aabbbb", "aabbbb"},
		{"write across a page boundary", "", []step{{op: "write", off: PageSize - 2, data: "wxyz"}, {op: "sync"}},
			string(make([]byte, PageSize-2)) + "wxyz", string(make([]byte, PageSize-2)) + "wxyz"},
		{"a hole reads as zeros", "ab", []step{{op: "write", off: 4, data: "cd"}}, "ab\x00\x00cd", "ab"},
		{"truncate shrinks at once, unsynced tail gone", "abcdef", []step{{op: "write", off: 6, data: "gh"}, {op: "truncate", off: 3}}, "abc", "abc"},
		{"truncate then write past the end", "abcdef", []step{{op: "truncate", off: 2}, {op: "write", off: 4, data: "Z"}, {op: "sync"}}, "ab\x00\x00Z", "ab\x00\x00Z"},
		{"truncate extends with zeros, durable at once", "ab", []step{{op: "truncate", off: 4}}, "ab\x00\x00", "ab\x00\x00"},
		{"truncate inside a dirty page clears its tail", "", []step{{op: "write", data: "abcdef"}, {op: "truncate", off: 2}, {op: "truncate", off: 6}, {op: "sync"}},
			"ab\x00\x00\x00\x00", "ab\x00\x00\x00\x00"},
		{"more than a page, unsynced", "", []step{{op: "write", data: long}}, long, ""},
		{"more than a page, synced", "", []step{{op: "write", data: long}, {op: "sync"}}, long, long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &memBacking{b: []byte(tc.initial)}
			f := newFile(b, int64(len(tc.initial)))
			for _, s := range tc.steps {
				var err error
				switch s.op {
				case "write":
					_, err = f.WriteAt([]byte(s.data), s.off)
				case "sync":
					_, err = f.Sync()
				case "truncate":
					err = f.Truncate(s.off)
				}
				if err != nil {
					t.Fatalf("%s: %v", s.op, err)
				}
			}
			if f.Size() != int64(len(tc.seen)) {
				t.Errorf("size %d, want %d", f.Size(), len(tc.seen))
			}
			got := make([]byte, len(tc.seen)+10)
			n, err := f.ReadAt(got, 0)
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			if string(got[:n]) != tc.seen {
				t.Errorf("read %q, want %q", got[:n], tc.seen)
			}
			// Reads at an offset see the same bytes.
			if len(tc.seen) > 3 {
				part := make([]byte, 2)
				if n, _ := f.ReadAt(part, 2); string(part[:n]) != tc.seen[2:4] {
					t.Errorf("read at 2: %q, want %q", part[:n], tc.seen[2:4])
				}
			}
			if string(b.b) != tc.durable {
				t.Errorf("backing %q, want %q", b.b, tc.durable)
			}
			if last := tc.steps[len(tc.steps)-1]; last.op == "sync" && f.Unsynced() != 0 {
				t.Errorf("%d bytes still unsynced after a sync", f.Unsynced())
			}
		})
	}
}

// Writers racing a sync and an unlink neither panic nor lose a synced write.
func TestPagesConcurrent(t *testing.T) {
	b := &lockedBacking{}
	f := newFile(b, 0)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				f.WriteAt([]byte{byte('a' + w)}, int64(w*PageSize+i))
				if i%50 == 0 {
					f.Sync()
				}
			}
		})
	}
	wg.Wait()
	if _, err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	for w := range 4 {
		got := make([]byte, 200)
		if _, err := b.ReadAt(got, int64(w*PageSize)); err != nil && err != io.EOF {
			t.Fatal(err)
		}
		if string(got) != strings.Repeat(string(rune('a'+w)), 200) {
			t.Errorf("writer %d's bytes after the last sync: %q", w, got[:10])
		}
	}
	f.mu.Lock()
	f.gone = true // what FS.forget does at the last unlink
	f.mu.Unlock()
	if _, err := f.WriteAt([]byte("after unlink"), 0); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.Sync(); n != 0 {
		t.Errorf("an unlinked file synced %d bytes", n)
	}
}

type lockedBacking struct {
	mu sync.Mutex
	memBacking
}

func (l *lockedBacking) ReadAt(p []byte, off int64) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.memBacking.ReadAt(p, off)
}

func (l *lockedBacking) WriteAt(p []byte, off int64) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.memBacking.WriteAt(p, off)
}
