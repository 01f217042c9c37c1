// Package lazyfs is a filesystem that keeps what is written to it in memory
// until it is fsynced, as LazyFS does for Jepsen: a loopback over a backing
// directory in which file data written (write(2), and mmap'd pages the
// kernel writes back) reaches the backing file only on fsync, fdatasync or
// msync of that file. Metadata (create, mkdir, rename, unlink, link,
// truncate, chmod) reaches the backing at once, as a journaling
// filesystem's metadata does.
//
// A power loss is the process killed: the backing directory then holds
// exactly what was synced. A process crash above it (the database's JVM)
// loses nothing, since the data lives in this process, as a page cache; a
// clean shutdown (SyncAll) writes everything out.
package lazyfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// key names a backing inode: unsynced data belongs to the inode, whatever
// its names.
type key struct{ dev, ino uint64 }

func keyOf(st *syscall.Stat_t) key { return key{uint64(st.Dev), st.Ino} }

// FS is the lazy filesystem's state: every backing inode with data written
// since its last sync.
type FS struct {
	backing string

	mu    sync.Mutex
	files map[key]*file

	fsyncs, written atomic.Int64
	// latency is what every write and fsync waits before it is served
	// (SetLatency; ns): a slow disk (the nemesis's slow-disk).
	latency atomic.Int64
}

// SetLatency makes every write and fsync wait d before it is served (0:
// none), as a slow disk does: a database that syncs each write (Cassandra's
// commitlog in batch mode) acknowledges it that much later. Requests are
// served side by side, so the waits do not queue behind one another.
func (l *FS) SetLatency(d time.Duration) { l.latency.Store(int64(max(d, 0))) }

// Latency is the latency SetLatency set.
func (l *FS) Latency() time.Duration { return time.Duration(l.latency.Load()) }

// slow waits the latency, or until the request is interrupted.
func (l *FS) slow(ctx context.Context) {
	d := l.Latency()
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// New makes the filesystem over the backing directory and returns it with
// the root node to mount.
func New(backing string) (*FS, fs.InodeEmbedder, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, nil, fmt.Errorf("lazyfs: backing %s: %w", backing, err)
	}
	l := &FS{backing: backing, files: map[key]*file{}}
	root := &fs.LoopbackRoot{Path: backing, Dev: uint64(st.Dev)}
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, l: l}
	}
	rootNode := root.NewNode(root, nil, "", &st)
	root.RootNode = rootNode
	return l, rootNode, nil
}

// Mount mounts the filesystem at dir. As root it mounts with mount(2)
// itself (no fusermount needed in a container).
func Mount(backing, dir string) (*FS, *fuse.Server, error) {
	l, root, err := New(backing)
	if err != nil {
		return nil, nil, err
	}
	srv, err := fs.Mount(dir, root, &fs.Options{MountOptions: fuse.MountOptions{
		FsName: "lockcheck-lazyfs", Name: "lazyfs",
		DirectMount: os.Geteuid() == 0,
		// The database runs as any user; it must see its files.
		AllowOther: os.Geteuid() == 0,
		// A kernel passthrough would bypass the pages (the handles refuse
		// it too).
		DisabledCapabilities: fuse.CAP_PASSTHROUGH,
	}})
	if err != nil {
		return nil, nil, fmt.Errorf("lazyfs: mount %s: %w", dir, err)
	}
	return l, srv, nil
}

// Status is what the filesystem holds: what a power loss now would throw
// away, and what it has done.
type Status struct {
	UnsyncedBytes int64 `json:"unsynced_bytes"`
	UnsyncedFiles int   `json:"unsynced_files"`
	Fsyncs        int64 `json:"fsyncs"`
	WrittenBytes  int64 `json:"written_bytes"`
	// LatencyMS is the latency each write and fsync waits (SetLatency).
	LatencyMS int64 `json:"latency_ms"`
}

// Status reads the filesystem's counts.
func (l *FS) Status() Status {
	files := l.snapshot()
	s := Status{Fsyncs: l.fsyncs.Load(), WrittenBytes: l.written.Load(), LatencyMS: l.Latency().Milliseconds()}
	for _, f := range files {
		if b := f.Unsynced(); b > 0 {
			s.UnsyncedBytes += b
			s.UnsyncedFiles++
		}
	}
	return s
}

// WriteOut writes everything to the backing, including the pages the kernel
// still holds dirty for the mount at dir: a shared mapping whose process died
// without msync (a killed JVM's commitlog) reaches the filesystem only when
// the kernel writes it back, which syncfs(2) on the mount forces.
func (l *FS) WriteOut(dir string) error {
	if fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		unix.Syncfs(fd)
		unix.Close(fd)
	}
	return l.SyncAll()
}

// SyncAll writes every unsynced page to the backing: what a clean shutdown
// does, and what a crash of a process above leaves to the page cache.
func (l *FS) SyncAll() error {
	var errs []error
	for _, f := range l.snapshot() {
		if _, err := f.Sync(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// snapshot lists the files with state, so that each is then locked on its
// own rather than under the map's lock.
func (l *FS) snapshot() []*file {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Collect(maps.Values(l.files))
}

// state is the unsynced state of inode k, open as fd, made on first need
// when create: its backing is a dup of fd, kept open while the inode
// lives, so that a sync reaches it after close(2) and renames.
func (l *FS) state(fd int, k key, create bool) (*file, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.files[k]; ok || !create {
		return f, nil
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, err
	}
	dup, err := syscall.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := newFile(os.NewFile(uintptr(dup), "backing"), st.Size)
	l.files[k] = f
	return f, nil
}

// lookup is the unsynced state of the inode at path, if any.
func (l *FS) lookup(path string) (*file, *syscall.Stat_t) {
	var st syscall.Stat_t
	if syscall.Lstat(path, &st) != nil {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.files[keyOf(&st)], &st
}

// forget drops the unsynced state of an inode whose last name went: its
// data can never be read again.
func (l *FS) forget(st *syscall.Stat_t) {
	l.mu.Lock()
	f, ok := l.files[keyOf(st)]
	delete(l.files, keyOf(st))
	l.mu.Unlock()
	if ok {
		f.mu.Lock()
		f.gone = true
		clear(f.pages)
		if c, ok := f.b.(interface{ Close() error }); ok {
			c.Close()
		}
		f.mu.Unlock()
	}
}

// node is a loopback node whose files keep their data lazily.
type node struct {
	fs.LoopbackNode
	l *FS
}

func (n *node) path() string { return filepath.Join(n.RootData.Path, n.Path(n.Root())) }

// writable opens the backing read-write when the caller asked write-only:
// a write of part of a page reads the rest first. O_DIRECT is dropped: the
// backing is written with ordinary aligned-or-not pwrite.
func writable(flags uint32) uint32 {
	flags &^= syscall.O_DIRECT
	if flags&syscall.O_ACCMODE == syscall.O_WRONLY {
		flags = flags&^syscall.O_ACCMODE | syscall.O_RDWR
	}
	return flags
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, writable(flags))
	if errno != 0 {
		return nil, 0, errno
	}
	h, errno := n.handle(fh)
	if errno == 0 && flags&syscall.O_TRUNC != 0 && h.f != nil {
		if err := h.f.Truncate(0); err != nil {
			return nil, 0, fs.ToErrno(err)
		}
	}
	return h, fl, errno
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	ch, fh, fl, errno := n.LoopbackNode.Create(ctx, name, writable(flags), mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	h, errno := n.handle(fh)
	return ch, h, fl, errno
}

func (n *node) handle(fh fs.FileHandle) (*handle, syscall.Errno) {
	lf, ok := fh.(*fs.LoopbackFile)
	if !ok {
		return nil, syscall.EIO
	}
	fd, ok := lf.PassthroughFd()
	if !ok {
		return nil, syscall.EBADF
	}
	// The inode is read once here: reads and writes then find its state
	// by key, with no stat of their own.
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, fs.ToErrno(err)
	}
	k := keyOf(&st)
	f, err := n.l.state(fd, k, false)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return &handle{LoopbackFile: lf, l: n.l, fd: fd, key: k, f: f}, 0
}

// Lookup tells the kernel the size the application wrote, not the
// backing's: the kernel appends at the size it was told.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Lookup(ctx, name, out)
	if errno != 0 {
		return ch, errno
	}
	if f, _ := n.l.lookup(filepath.Join(n.path(), name)); f != nil {
		out.Size = uint64(f.Size())
	}
	return ch, 0
}

// Statx answers the kernel's statx (sent when a caller asks for more than
// the basic fields, e.g. the birth time) with the written size too: the
// loopback's would report the backing's.
func (n *node) Statx(ctx context.Context, fh fs.FileHandle, flags, mask uint32, out *fuse.StatxOut) syscall.Errno {
	if errno := n.LoopbackNode.Statx(ctx, fh, flags, mask, out); errno != 0 {
		return errno
	}
	var f *file
	if h, ok := fh.(*handle); ok {
		f, _ = h.state(false)
	} else {
		f, _ = n.l.lookup(n.path())
	}
	if f != nil {
		out.Size = uint64(f.Size())
	}
	return 0
}

func (n *node) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if h, ok := fh.(*handle); ok {
		return h.Getattr(ctx, out)
	}
	if errno := n.LoopbackNode.Getattr(ctx, nil, out); errno != 0 {
		return errno
	}
	if f, _ := n.l.lookup(n.path()); f != nil {
		out.Size = uint64(f.Size())
	}
	return 0
}

func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if errno := n.LoopbackNode.Setattr(ctx, fh, in, out); errno != 0 || fh != nil {
		return errno // with a handle, the handle's Setattr did it all
	}
	f, _ := n.l.lookup(n.path())
	if f == nil {
		return 0
	}
	if sz, ok := in.GetSize(); ok {
		if err := f.Truncate(int64(sz)); err != nil {
			return fs.ToErrno(err)
		}
	}
	out.Size = uint64(f.Size())
	return 0
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	_, st := n.l.lookup(filepath.Join(n.path(), name))
	if errno := n.LoopbackNode.Unlink(ctx, name); errno != 0 {
		return errno
	}
	if st != nil && st.Nlink <= 1 {
		n.l.forget(st)
	}
	return 0
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	var replaced *syscall.Stat_t
	if p, ok := newParent.(*node); ok && flags == 0 {
		_, replaced = n.l.lookup(filepath.Join(p.path(), newName))
	}
	if errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags); errno != 0 {
		return errno
	}
	if replaced != nil && replaced.Nlink <= 1 {
		n.l.forget(replaced)
	}
	return 0
}

// handle is an open file: reads see the unsynced pages, writes go to them,
// fsync makes them durable. Everything else is the loopback's.
type handle struct {
	*fs.LoopbackFile
	l   *FS
	fd  int
	key key // the backing inode

	mu sync.Mutex
	f  *file // nil until the inode has unsynced state
}

func (h *handle) state(create bool) (*file, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f == nil {
		f, err := h.l.state(h.fd, h.key, create)
		if err != nil {
			return nil, err
		}
		h.f = f
	}
	return h.f, nil
}

// PassthroughFd is refused: a kernel passthrough would bypass the pages.
func (h *handle) PassthroughFd() (int, bool) { return 0, false }

func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	f, err := h.state(false)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	if f == nil {
		return h.LoopbackFile.Read(ctx, dest, off)
	}
	n, err := f.ReadAt(dest, off)
	if err != nil && n == 0 && !errors.Is(err, io.EOF) {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	h.l.slow(ctx)
	f, err := h.state(true)
	if err != nil {
		return 0, fs.ToErrno(err)
	}
	n, err := f.WriteAt(data, off)
	h.l.written.Add(int64(n))
	return uint32(n), fs.ToErrno(err)
}

// Fsync serves fsync, fdatasync and msync alike: the file's pages reach
// the backing.
func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	h.l.slow(ctx)
	h.l.fsyncs.Add(1)
	f, err := h.state(false)
	if err != nil || f == nil {
		return fs.ToErrno(err)
	}
	_, err = f.Sync()
	return fs.ToErrno(err)
}

func (h *handle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	if errno := h.LoopbackFile.Getattr(ctx, out); errno != 0 {
		return errno
	}
	if f, _ := h.state(false); f != nil {
		out.Size = uint64(f.Size())
	}
	return 0
}

func (h *handle) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if errno := h.LoopbackFile.Setattr(ctx, in, out); errno != 0 {
		return errno
	}
	f, err := h.state(false)
	if err != nil || f == nil {
		return fs.ToErrno(err)
	}
	if sz, ok := in.GetSize(); ok {
		if err := f.Truncate(int64(sz)); err != nil {
			return fs.ToErrno(err)
		}
	}
	out.Size = uint64(f.Size())
	return 0
}

// Allocate reserves backing space; the size the application sees grows
// with it unless FALLOC_FL_KEEP_SIZE.
func (h *handle) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	if errno := h.LoopbackFile.Allocate(ctx, off, size, mode); errno != 0 {
		return errno
	}
	if f, _ := h.state(false); f != nil && mode&1 == 0 { // 1: FALLOC_FL_KEEP_SIZE
		f.mu.Lock()
		f.size = max(f.size, int64(off+size))
		f.mu.Unlock()
	}
	return 0
}

// Lseek answers SEEK_DATA and SEEK_HOLE from the written size, the whole
// file as data: the backing's answer would miss unsynced data past its end
// (and cp or tar, which skip holes, would drop it).
func (h *handle) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	f, err := h.state(false)
	if err != nil {
		return 0, fs.ToErrno(err)
	}
	if f == nil || (whence != unix.SEEK_DATA && whence != unix.SEEK_HOLE) {
		return h.LoopbackFile.Lseek(ctx, off, whence)
	}
	size := uint64(f.Size())
	if off >= size {
		return 0, syscall.ENXIO
	}
	if whence == unix.SEEK_DATA {
		return off, 0
	}
	return size, 0
}
