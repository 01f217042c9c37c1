package exclusive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// LeaseDirEnv overrides where Local keeps its lease files (tests; a machine
// whose users share another directory than the temporary one).
const LeaseDirEnv = "LOCKCHECK_LEASE_DIR"

// LeaseDir is where Local keeps lease files: $LOCKCHECK_LEASE_DIR, else
// lockcheck-leases in the machine's temporary directory, shared by every
// user of the machine (mode 1777, as /tmp).
func LeaseDir() string {
	if d := os.Getenv(LeaseDirEnv); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "lockcheck-leases")
}

// Local is the lease of a Docker cluster: the file LeaseDir()/docker-NAME.lease,
// held by an open-file-description write lock (fcntl F_OFD_SETLK) and
// holding the holder's JSON. The kernel releases the lock with the holder's
// last descriptor, so a holder that died never holds it; the file itself is
// never removed (a waiter locks the file it opened: removing it would let a
// newcomer lock another).
type Local struct {
	Name string // the cluster's name
	Dir  string // "": LeaseDir()
}

// Key is "docker:NAME".
func (l Local) Key() string { return "docker:" + l.Name }

func (l Local) path() string {
	dir := l.Dir
	if dir == "" {
		dir = LeaseDir()
	}
	return filepath.Join(dir, "docker-"+l.Name+".lease")
}

func (l Local) open() (*os.File, error) {
	p := l.path()
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		return nil, err
	}
	// Every user of the machine may wait on and take the lease.
	if fi, err := os.Stat(filepath.Dir(p)); err == nil && fi.Mode().Perm() != 0o777 && l.Dir == "" && os.Getenv(LeaseDirEnv) == "" {
		_ = os.Chmod(filepath.Dir(p), 0o777|os.ModeSticky)
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	_ = f.Chmod(0o666)
	return f, nil
}

// lockAll is a write lock on the whole file.
func lockAll(typ int16) *unix.Flock_t {
	return &unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: 0, Len: 0}
}

// TryTake locks the file and writes me into it, or reads the holder.
func (l Local) TryTake(ctx context.Context, me Holder) (func(), Holder, error) {
	release, h, _, err := l.TryTakeNoted(ctx, me)
	if release == nil {
		return nil, h, err
	}
	return func() { release(false) }, h, err
}

// TryTakeNoted is TryTake that reads the last holder's note: wasClean when
// the file still holds what the last holder wrote as it let go, saying it
// left the cluster healed and healthy (every taker writes its own name
// over it, and a holder that dies leaves its name, so only the take right
// after such a release reads it). release(clean) leaves that note for the
// next holder, or none.
func (l Local) TryTakeNoted(_ context.Context, me Holder) (release func(clean bool), holder Holder, wasClean bool, err error) {
	f, err := l.open()
	if err != nil {
		return nil, Holder{}, false, fmt.Errorf("lease %s: %w", l.path(), err)
	}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, lockAll(unix.F_WRLCK)); err != nil {
		h, _ := readHolder(f)
		f.Close()
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
			return nil, h, false, nil
		}
		return nil, Holder{}, false, fmt.Errorf("lease %s: lock: %w", l.path(), err)
	}
	wasClean = readNote(f)
	b, _ := json.Marshal(me)
	if err := writeHolder(f, b); err != nil {
		f.Close()
		return nil, Holder{}, false, fmt.Errorf("lease %s: %w", l.path(), err)
	}
	return func(clean bool) {
		// Say the lease is free before the lock goes (a status read
		// between the two would name a holder that left): an empty file,
		// or the note, which names no holder.
		if clean {
			note := me
			note.Clean = true
			b, _ := json.Marshal(note)
			if writeHolder(f, b) != nil {
				_ = f.Truncate(0)
			}
		} else {
			_ = f.Truncate(0)
		}
		f.Close()
	}, Holder{}, wasClean, nil
}

// readNote tells whether the file holds a released holder's note that it
// left the cluster clean.
func readNote(f *os.File) bool {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<16))
	if err != nil {
		return false
	}
	var h Holder
	return json.Unmarshal(b, &h) == nil && h.Clean
}

// Holder reads who holds the lease: the file's holder when its lock is
// held, nobody otherwise (a holder that died leaves its JSON behind).
func (l Local) Holder(context.Context) (Holder, bool, error) {
	f, err := os.Open(l.path())
	if errors.Is(err, os.ErrNotExist) {
		return Holder{}, false, nil
	}
	if err != nil {
		return Holder{}, false, err
	}
	defer f.Close()
	lk := lockAll(unix.F_WRLCK)
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, lk); err != nil {
		return Holder{}, false, fmt.Errorf("lease %s: %w", l.path(), err)
	}
	if lk.Type == unix.F_UNLCK {
		return Holder{}, false, nil
	}
	h, err := readHolder(f)
	return h, true, err
}

func writeHolder(f *os.File, b []byte) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt(append(b, '\n'), 0); err != nil {
		return err
	}
	return nil
}

func readHolder(f *os.File) (Holder, error) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<16))
	if err != nil {
		return Holder{}, err
	}
	var h Holder
	if s := strings.TrimSpace(string(b)); s != "" {
		if err := json.Unmarshal([]byte(s), &h); err != nil {
			return Holder{Command: "unreadable lease file"}, nil
		}
	}
	if h.Clean {
		// A released holder's note: the file is locked by a taker that
		// has not yet written its name over it.
		h = Holder{}
	}
	if h.Command == "" {
		h.Command = "a process still writing its name"
	}
	return h, nil
}

// pidGone tells whether no process of that pid exists.
func pidGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
