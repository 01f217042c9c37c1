package history

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// errNoReserve: the filesystem cannot allocate ahead (no fallocate), so
// lines take their space as they are written, as before.
var errNoReserve = errors.New("history: the filesystem allocates no space ahead")

// reserve is the history file as the bufio writer's sink: it keeps space
// allocated ahead of the lines written (fallocate, the file's size left as
// is), one chunk at a time, and says the store is full when the next chunk
// cannot be had while half a chunk is still ahead.
type reserve struct {
	f         *os.File
	chunk     int64
	written   int64 // bytes the file took
	allocated int64 // bytes allocated from 0
	off       bool  // no fallocate here
	onFull    func(error)
}

func (r *reserve) Write(p []byte) (int, error) {
	if !r.off && r.chunk > 0 && r.written+int64(len(p)) > r.allocated-r.chunk/2 {
		if err := r.grow(r.written + int64(len(p))); err != nil && !errors.Is(err, errNoReserve) && r.onFull != nil {
			r.onFull(fmt.Errorf("history: the store is full: %w", err))
		}
	}
	n, err := r.f.Write(p)
	r.written += int64(n)
	return n, err
}

func (r *reserve) Sync() error { return r.f.Sync() }

// grow allocates a chunk past at (at least to at plus one chunk), keeping
// the file's size: a reader of a killed run's history sees no padding.
func (r *reserve) grow(at int64) error {
	if r.off || r.chunk <= 0 {
		return errNoReserve
	}
	end := at + r.chunk
	if end <= r.allocated {
		return nil
	}
	err := unix.Fallocate(int(r.f.Fd()), unix.FALLOC_FL_KEEP_SIZE, r.allocated, end-r.allocated)
	switch {
	case err == nil:
		r.allocated = end
		return nil
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EINVAL):
		r.off = true
		return errNoReserve
	}
	return fmt.Errorf("allocate %d bytes ahead: %w", end-r.allocated, err)
}

// release gives back the space allocated past the last line, so that a
// stored run costs only its history.
func (r *reserve) release() error {
	if r.off || r.allocated <= r.written {
		return nil
	}
	err := unix.Fallocate(int(r.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, r.written, r.allocated-r.written)
	if err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("history: give back the space allocated ahead: %w", err)
	}
	r.allocated = r.written
	return nil
}

// check asks the filesystem, once a flush, whether it can still take the
// rest of a run: a store that other files filled up, or that turned
// read-only, is found within a flush even while this file's lines still
// land in the space set aside.
func (r *reserve) check() {
	if r.onFull == nil {
		return
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(r.f.Fd()), &st); err != nil {
		return
	}
	switch {
	case st.Flags&unix.ST_RDONLY != 0:
		r.onFull(fmt.Errorf("history: the store turned read-only: %w", unix.EROFS))
	case r.chunk > 0 && int64(st.Bavail)*st.Bsize < r.chunk/2:
		r.onFull(fmt.Errorf("history: the store is full (%d bytes left): %w", int64(st.Bavail)*st.Bsize, unix.ENOSPC))
	}
}
