package lazyfs

import (
	"errors"
	"io"
	"maps"
	"slices"
	"sync"
)

// PageSize is the unit the unsynced data is kept in, as a page cache keeps it.
const PageSize = 4096

// Backing is the durable file under the unsynced pages: what survives a
// power loss. *os.File implements it.
type Backing interface {
	io.ReaderAt
	io.WriterAt
	Truncate(size int64) error
}

// file is one file's unsynced state: the pages written since its last
// fsync and its size as the application sees it. It is kept per backing
// inode, not per open file, so that it outlives close(2) (close does not
// make data durable) and follows the file through renames.
type file struct {
	mu sync.Mutex
	// b is kept open while pages are unsynced, so that a sync or a flush of
	// everything reaches the inode whatever its name is by then.
	b     Backing
	pages map[int64][]byte // page index -> PageSize bytes
	size  int64            // the size the application sees
	// gone: the inode's last name was unlinked and b closed; what is still
	// written through open descriptors can never reach a disk.
	gone bool
}

func newFile(b Backing, size int64) *file {
	return &file{b: b, pages: map[int64][]byte{}, size: size}
}

// page returns page i for writing, loading what the backing holds first
// (a write of part of a page keeps the rest).
func (f *file) page(i int64) ([]byte, error) {
	if p, ok := f.pages[i]; ok {
		return p, nil
	}
	p := make([]byte, PageSize)
	if i*PageSize < f.size && !f.gone {
		if _, err := f.b.ReadAt(p, i*PageSize); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
	}
	f.pages[i] = p
	return p, nil
}

// WriteAt keeps data in memory; nothing reaches the backing before Sync.
func (f *file) WriteAt(data []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for n < len(data) {
		at := off + int64(n)
		p, err := f.page(at / PageSize)
		if err != nil {
			return n, err
		}
		n += copy(p[at%PageSize:], data[n:])
	}
	f.size = max(f.size, off+int64(len(data)))
	return n, nil
}

// ReadAt reads the file as written: the backing with the unsynced pages
// over it, up to the size the application sees.
func (f *file) ReadAt(dest []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone {
		return 0, io.EOF
	}
	if off >= f.size {
		return 0, io.EOF
	}
	dest = dest[:min(int64(len(dest)), f.size-off)]
	n, err := f.b.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	clear(dest[n:]) // past the backing's end: zeros, or pages below
	for i := off / PageSize; i*PageSize < off+int64(len(dest)); i++ {
		p, ok := f.pages[i]
		if !ok {
			continue
		}
		// Overlap of page i and dest, in file offsets.
		lo, hi := max(i*PageSize, off), min((i+1)*PageSize, off+int64(len(dest)))
		copy(dest[lo-off:hi-off], p[lo-i*PageSize:hi-i*PageSize])
	}
	return len(dest), nil
}

// Truncate applies at once to the backing (metadata is journaled) and to
// the unsynced pages: none survives past the new end.
func (f *file) Truncate(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone {
		return nil
	}
	if err := f.b.Truncate(size); err != nil {
		return err
	}
	for i, p := range f.pages {
		switch {
		case i*PageSize >= size:
			delete(f.pages, i)
		case (i+1)*PageSize > size:
			clear(p[size-i*PageSize:])
		}
	}
	f.size = size
	return nil
}

// Sync writes the unsynced pages to the backing, in order, no further than
// the file's size, and forgets them: they are durable now.
func (f *file) Sync() (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone {
		clear(f.pages)
		return 0, nil
	}
	var n int64
	for _, i := range slices.Sorted(maps.Keys(f.pages)) {
		p := f.pages[i]
		end := min(int64(PageSize), f.size-i*PageSize)
		if end > 0 {
			if _, err := f.b.WriteAt(p[:end], i*PageSize); err != nil {
				return n, err
			}
			n += end
		}
		delete(f.pages, i)
	}
	return n, nil
}

// Unsynced is how many bytes a power loss now would throw away.
func (f *file) Unsynced() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return int64(len(f.pages)) * PageSize
}

// Size is the size the application sees.
func (f *file) Size() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.size
}
