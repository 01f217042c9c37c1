package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// DefaultFlushInterval bounds how much of a killed run's history can be lost:
// everything appended more than this long ago is on disk.
const DefaultFlushInterval = time.Second

// Writer streams a history as JSONL. It is safe for concurrent use: each
// Append takes the next index and a monotonic time under one mutex, so the
// file is always in index and time order.
type Writer struct {
	mu      sync.Mutex
	bw      *bufio.Writer
	sink    io.Writer
	closer  io.Closer
	start   time.Time // carries a monotonic reading
	next    int64
	last    int64 // last stamped time, so time never decreases
	err     error // first write error: sticky, every later Append fails
	dirty   bool
	closed  bool
	stop    chan struct{}
	stopped chan struct{}
	store   *reserve // nil: the sink is not a file Create made
	onFull  func(error)
	full1   sync.Once
}

// full tells the caller, once, that the store can take no more.
func (w *Writer) full(err error) {
	if w.onFull != nil {
		w.full1.Do(func() { w.onFull(err) })
	}
}

// WriterOption configures a Writer.
type WriterOption func(*writerConfig)

type writerConfig struct {
	start    time.Time
	interval time.Duration
	reserve  int64
	onFull   func(error)
}

// DefaultReserve is the disk space Create sets aside ahead of the history's
// end: lines land in space already allocated, so a filesystem that fills up
// during a run costs no line, and the run hears of it (WithOnFull) while a
// reserve is left for the lines of its stop and heal.
const DefaultReserve = 4 << 20

// WithReserve sets how much space Create allocates ahead of the history's
// end (default DefaultReserve); zero or negative allocates nothing ahead.
func WithReserve(n int64) WriterOption { return func(c *writerConfig) { c.reserve = n } }

// WithOnFull calls f once, with the cause, when the store can take no more:
// the space ahead cannot be grown (the filesystem is full), or a write or
// sync failed (the filesystem turned read-only). Lines appended after it
// still land while the space set aside lasts; the caller stops what
// appends. f must not call the Writer.
func WithOnFull(f func(error)) WriterOption { return func(c *writerConfig) { c.onFull = f } }

// WithStart sets time 0 of the history (default: when the writer is made).
// Pass a time.Now() reading so that times stay monotonic.
func WithStart(t time.Time) WriterOption { return func(c *writerConfig) { c.start = t } }

// WithFlushInterval sets how often buffered lines are flushed (and synced,
// when the sink is a file). Zero or negative disables the background flush:
// lines then reach the sink only on Flush and Close.
func WithFlushInterval(d time.Duration) WriterOption {
	return func(c *writerConfig) { c.interval = d }
}

// Create creates (truncates) the history file at path; time 0 is now.
func Create(path string, opts ...WriterOption) (*Writer, error) {
	cfg := newConfig(opts)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("history: create: %w", err)
	}
	r := &reserve{f: f, chunk: cfg.reserve}
	if err := r.grow(0); err != nil && !errors.Is(err, errNoReserve) {
		// Full before the first line: nothing to keep, nothing to run.
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("history: create %s: %w", path, err)
	}
	w := newWriter(r, cfg)
	w.store, w.closer = r, f
	r.onFull = w.full
	return w, nil
}

// NewWriter writes a history to w. If w has a Sync() error method (an
// *os.File), every flush also syncs it. NewWriter does not close w.
func NewWriter(w io.Writer, opts ...WriterOption) *Writer {
	return newWriter(w, newConfig(opts))
}

func newConfig(opts []WriterOption) writerConfig {
	cfg := writerConfig{start: time.Now(), interval: DefaultFlushInterval, reserve: DefaultReserve}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

func newWriter(w io.Writer, cfg writerConfig) *Writer {
	hw := &Writer{
		bw:     bufio.NewWriterSize(w, 64<<10),
		sink:   w,
		start:  cfg.start,
		onFull: cfg.onFull,
	}
	if cfg.interval > 0 {
		hw.stop = make(chan struct{})
		hw.stopped = make(chan struct{})
		go hw.flushLoop(cfg.interval)
	}
	return hw
}

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("history: writer closed")

// Append stamps op with the next index and the time since the start, writes
// it as one line and returns the stamped op. The caller's Index and Time are
// ignored. A write error is sticky: the history is then incomplete, and
// every later Append and Close reports it.
func (w *Writer) Append(op Op) (Op, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return op, ErrClosed
	}
	if w.err != nil {
		return op, w.err
	}
	t := time.Since(w.start).Nanoseconds()
	if t < w.last {
		t = w.last
	}
	if t < 0 {
		t = 0
	}
	op.Index, op.Time = w.next, t
	line, err := json.Marshal(op)
	if err != nil {
		// A bad Value (not valid JSON) is the caller's bug; the index is not
		// consumed so that the file stays gap-free.
		return op, fmt.Errorf("history: encode op: %w", err)
	}
	line = append(line, '\n')
	if _, err := w.bw.Write(line); err != nil {
		w.err = fmt.Errorf("history: write: %w", err)
		w.full(w.err)
		return op, w.err
	}
	w.next++
	w.last = t
	w.dirty = true
	return op, nil
}

// Flush writes buffered lines to the sink and syncs it if it is a file.
// The sync runs outside the lock, so clients appending meanwhile are not
// held up by the disk.
func (w *Writer) Flush() error {
	w.mu.Lock()
	wrote, err := w.writeLocked()
	if w.store != nil && err == nil {
		w.store.check()
	}
	w.mu.Unlock()
	if err != nil || !wrote {
		return err
	}
	return w.sync()
}

// writeLocked hands buffered lines to the sink; w.mu is held.
func (w *Writer) writeLocked() (bool, error) {
	if w.err != nil {
		return false, w.err
	}
	if !w.dirty {
		return false, nil
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("history: flush: %w", err)
		w.full(w.err)
		return false, w.err
	}
	w.dirty = false
	return true, nil
}

func (w *Writer) sync() error {
	s, ok := w.sink.(interface{ Sync() error })
	if !ok {
		return nil
	}
	if err := s.Sync(); err != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.err == nil {
			w.err = fmt.Errorf("history: sync: %w", err)
		}
		w.full(w.err)
		return w.err
	}
	return nil
}

func (w *Writer) flushLoop(d time.Duration) {
	defer close(w.stopped)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			// An error is sticky and reported by the next Append or Close.
			_ = w.Flush()
		}
	}
}

// Close flushes and syncs the history and closes the file made by Create.
// It is safe to call more than once.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.err
	}
	w.closed = true
	w.mu.Unlock()
	if w.stop != nil {
		close(w.stop)
		<-w.stopped
	}
	w.mu.Lock()
	_, err := w.writeLocked()
	w.mu.Unlock()
	if err == nil {
		err = w.sync()
	}
	if w.store != nil {
		if rerr := w.store.release(); rerr != nil && err == nil {
			err = rerr
		}
	}
	if w.closer != nil {
		if cerr := w.closer.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("history: close: %w", cerr)
		}
	}
	return err
}

// Len is the number of ops appended so far.
func (w *Writer) Len() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.next
}
