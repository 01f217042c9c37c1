// Package exclusive gives one process at a time the use of a cluster under
// test: a lease that every user of the cluster sees, taken before anything
// faults or heals the cluster and held until it is healthy again. Two runs
// on one cluster otherwise undo each other's faults (the second "heals" the
// first's live pause window) and both report what they did not test.
//
// Where the lease lives depends on the cluster (see docs/running.md):
//
//   - a Docker cluster of lockcheck's own is used from the machine its Docker
//     daemon runs on: the lease is a file under the machine's temporary
//     directory locked with an open-file-description lock (Local). The
//     kernel drops the lock when its holder dies, however it dies, so a
//     SIGKILLed run never blocks the next one, and no fault the run injects
//     into the cluster can touch it.
//   - a cluster of the user's (--hosts) reached over SSH may be used from
//     several machines, and a run's leftover partition may cut CQL off
//     from the next: the lease is flock(1) on every host, held over SSH,
//     which lockcheck's partitions let through (Hosts).
//   - a cluster of the user's without node access is faulted only at its
//     clients: the lease is a row written with a lightweight transaction
//     and a TTL the holder renews (CQL).
//
// A process takes a lease once per key: a nested Take (a run inside a test
// binary that holds the cluster for its package) shares the holding.
package exclusive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Holder is who holds a cluster: enough for a second user to know whom to
// ask, and for a process on the same host to tell whether it still lives.
type Holder struct {
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Started time.Time `json:"started"`
	// Boot is the process's start in clock ticks after boot
	// (/proc/PID/stat), so that a pid reused by another process is not
	// taken for the holder.
	Boot int64 `json:"boot,omitempty"`
	// Clean is set only in what a holder leaves as it lets go (a
	// NotedStore's note): it left the cluster healed and healthy, so the
	// next holder need not probe it for leftovers (Lease.Clean).
	Clean bool `json:"clean,omitempty"`
}

// Self is this process as a holder.
func Self() Holder {
	host, _ := os.Hostname()
	return Holder{Host: host, PID: os.Getpid(), Command: command(), Started: started, Boot: procStart(os.Getpid())}
}

var started = time.Now().UTC().Truncate(time.Second)

// command is this process's command line, shortened to one line.
func command() string {
	c := strings.Join(os.Args, " ")
	if i := strings.LastIndexByte(os.Args[0], '/'); i >= 0 {
		c = c[i+1:]
	}
	if len(c) > 120 {
		c = c[:117] + "..."
	}
	return c
}

// String names the holder in one phrase: "pid 4242 on host ci-7 (lockcheck
// run --nemesis pause --time 40s), since 23:12:01 UTC".
func (h Holder) String() string {
	return fmt.Sprintf("pid %d on host %s (%s), since %s", h.PID, h.Host, h.Command, h.Started.UTC().Format("2006-01-02 15:04:05 UTC"))
}

// Same tells whether h and o are one process.
func (h Holder) Same(o Holder) bool {
	return h.Host == o.Host && h.PID == o.PID && h.Boot == o.Boot
}

// Alive tells whether h may still live: false only when h ran on this host
// and its process is gone (or the pid now belongs to another process).
// A holder on another host is alive as far as this host can tell.
func (h Holder) Alive() bool {
	host, _ := os.Hostname()
	if h.Host != host || h.PID <= 0 {
		return true
	}
	b := procStart(h.PID)
	if b < 0 {
		return !pidGone(h.PID)
	}
	return b == h.Boot || h.Boot == 0
}

// Store is where one cluster's lease is kept.
type Store interface {
	// Key names the cluster, unique across stores ("docker:lockcheck").
	Key() string
	// TryTake takes the lease for me if it is free or its holder is dead,
	// and returns it held; else it returns the holder, alive as far as the
	// store can tell. An error says the lease could not be read.
	TryTake(ctx context.Context, me Holder) (release func(), holder Holder, err error)
	// Holder reads who holds the lease (ok false: nobody).
	Holder(ctx context.Context) (h Holder, ok bool, err error)
}

// NotedStore is a Store that passes a holding's note (Lease.SetClean) on
// to the next holder: the release says whether the holder left the cluster
// clean, and the take right after it reads that (a holder that dies says
// nothing, and any take in between writes over it). Local is one; for the
// others a holding starts with no note.
type NotedStore interface {
	Store
	TryTakeNoted(ctx context.Context, me Holder) (release func(clean bool), holder Holder, wasClean bool, err error)
}

// BusyError is a lease held by another process, with --no-wait.
type BusyError struct {
	Cluster string
	Holder  Holder
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("cluster %s is in use by %s (wait for it, or end that process)", e.Cluster, e.Holder)
}

// ErrUnavailable is wrapped by a Store's error when the lease cannot be
// read for now (a cluster without a quorum): Take waits on it as on a
// holder. Any other error ends Take.
var ErrUnavailable = errors.New("lease unavailable")

// ErrBusy is wrapped by every BusyError.
var ErrBusy = errors.New("cluster in use")

func (e *BusyError) Unwrap() error { return ErrBusy }

// Lease is a held cluster. Release it when done (it is idempotent).
type Lease struct {
	key     string
	holding uint64
	once    sync.Once
}

// Holding names this process's holding of the store's lease that l is part
// of: nested Takes share one, and a Take after the last Release let the
// lease go starts a new one (0 for a nil Lease). Two leases of one holding
// saw no other process hold the cluster between them, so that what this
// process left on the cluster is what the later one finds.
func (l *Lease) Holding() uint64 {
	if l == nil {
		return 0
	}
	return l.holding
}

// SetClean records whether this process left the cluster in its known
// state (healed and healthy) within l's holding, or forgets that it did: a
// note that lives as long as the holding, so that the next user of the
// holding in this process (a run after a package's heal, clustertest.Main;
// a run after a run) need not probe for what another process left, since
// none held the cluster in between. A NotedStore passes the holding's last
// note on to the next process that takes the cluster right after it (a
// holding starts with it: Clean). A nil Lease keeps no note.
func (l *Lease) SetClean(ok bool) {
	if l == nil {
		return
	}
	held.setClean(l.key, l.holding, ok)
}

// Clean tells whether SetClean(true) was the last note of l's holding, or,
// before any, whether the process that held the cluster last left it
// clean (a NotedStore's note).
func (l *Lease) Clean() bool {
	if l == nil {
		return false
	}
	return held.clean(l.key, l.holding)
}

// Release gives the cluster up; the last release of a key in a process
// releases the store's lease.
func (l *Lease) Release() {
	if l == nil {
		return
	}
	l.once.Do(func() { held.release(l.key) })
}

// Option configures Take.
type Option func(*takeConfig)

type takeConfig struct {
	noWait bool
	say    func(string)
	poll   time.Duration
	log    *slog.Logger
	name   string
}

// NoWait makes Take return a *BusyError at once when the cluster is held.
func NoWait(b bool) Option { return func(c *takeConfig) { c.noWait = b } }

// Say is told, once, the one line a waiting Take prints (the holder and
// how to refuse instead), and once more when it is taken.
func Say(f func(string)) Option { return func(c *takeConfig) { c.say = f } }

// Name is the cluster's name in messages (default: the store's key).
func Name(n string) Option { return func(c *takeConfig) { c.name = n } }

// WithLogger logs lease errors that Take retries through.
func WithLogger(l *slog.Logger) Option { return func(c *takeConfig) { c.log = l } }

// pollEvery is how often a waiting Take asks again.
const pollEvery = 500 * time.Millisecond

// Take takes the cluster of store for this process, waiting while another
// live process holds it (or, with NoWait, returning a *BusyError). A store
// that cannot be read is waited on as a holder is: it may be a live run's
// faults that cut it off.
func Take(ctx context.Context, store Store, opts ...Option) (*Lease, error) {
	// "docker:lockcheck" is the cluster lockcheck, "cql:h1,h2:9042/ks" the
	// hosts' keyspace ks.
	_, name, _ := strings.Cut(store.Key(), ":")
	cfg := takeConfig{poll: pollEvery, log: slog.Default(), name: name}
	for _, o := range opts {
		o(&cfg)
	}
	key := store.Key()
	nested, holding := held.enter(key)
	if nested {
		return &Lease{key: key, holding: holding}, nil
	}
	me := Self()
	said := ""
	tick := time.NewTicker(cfg.poll)
	defer tick.Stop()
	for {
		release, h, clean, err := tryTake(ctx, store, me)
		if err == nil && release != nil {
			held.set(key, release, clean)
			if said != "" && cfg.say != nil {
				cfg.say(fmt.Sprintf("cluster %s is free: taken", cfg.name))
			}
			return &Lease{key: key, holding: holding}, nil
		}
		line := ""
		switch {
		case err != nil && !errors.Is(err, ErrUnavailable):
			held.abandon(key)
			return nil, fmt.Errorf("cluster %s: %w", cfg.name, err)
		case err != nil:
			if cfg.noWait {
				held.abandon(key)
				return nil, fmt.Errorf("cluster %s: cannot read its lease: %w", cfg.name, err)
			}
			line = fmt.Sprintf("cluster %s: cannot read its lease (%v): a run may be faulting it; waiting (lockcheck cluster heal once nothing runs)", cfg.name, err)
			cfg.log.Debug("lease unreadable", "cluster", cfg.name, "err", err)
		default:
			if cfg.noWait {
				held.abandon(key)
				return nil, &BusyError{Cluster: cfg.name, Holder: h}
			}
			line = fmt.Sprintf("cluster %s is in use by %s; waiting until it is free (--no-wait: refuse instead)", cfg.name, h)
		}
		if said == "" && cfg.say != nil {
			cfg.say(line)
		}
		said = line
		select {
		case <-ctx.Done():
			held.abandon(key)
			return nil, fmt.Errorf("cluster %s: waiting for its lease: %w", cfg.name, ctx.Err())
		case <-tick.C:
		}
	}
}

// tryTake is store.TryTake, with the last holder's note from a NotedStore.
func tryTake(ctx context.Context, store Store, me Holder) (func(clean bool), Holder, bool, error) {
	if ns, ok := store.(NotedStore); ok {
		return ns.TryTakeNoted(ctx, me)
	}
	release, h, err := store.TryTake(ctx, me)
	if release == nil {
		return nil, h, false, err
	}
	return func(bool) { release() }, h, false, err
}

// held is this process's leases, by key, counted: a nested Take shares the
// holding, and the last Release releases it.
var held = &registry{m: map[string]*entry{}}

type registry struct {
	mu sync.Mutex
	m  map[string]*entry
}

type entry struct {
	n       int
	ready   chan struct{} // closed once the first Take took it (or gave up)
	release func(clean bool)
	holding uint64 // Lease.Holding
	clean   bool   // Lease.SetClean's last note in this holding
}

// holdings numbers the holdings (Lease.Holding) of this process.
var holdings atomic.Uint64

// enter counts a Take of key: nested is true when this process already
// holds it (or another goroutine is taking it and succeeds), false when the
// caller must take it from the store; holding is the holding's number.
func (r *registry) enter(key string) (nested bool, holding uint64) {
	for {
		r.mu.Lock()
		e := r.m[key]
		if e == nil {
			e = &entry{n: 1, ready: make(chan struct{}), holding: holdings.Add(1)}
			r.m[key] = e
			r.mu.Unlock()
			return false, e.holding
		}
		ready := e.ready
		r.mu.Unlock()
		<-ready
		r.mu.Lock()
		if r.m[key] == e {
			e.n++
			r.mu.Unlock()
			return true, e.holding
		}
		r.mu.Unlock() // the first Take gave up: try again
	}
}

func (r *registry) set(key string, release func(clean bool), clean bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.m[key]
	e.release, e.clean = release, clean
	close(e.ready)
}

func (r *registry) setClean(key string, holding uint64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.m[key]; e != nil && e.holding == holding {
		e.clean = ok
	}
}

func (r *registry) clean(key string, holding uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.m[key]
	return e != nil && e.holding == holding && e.clean
}

func (r *registry) abandon(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.m[key]
	delete(r.m, key)
	close(e.ready)
}

func (r *registry) release(key string) {
	r.mu.Lock()
	e := r.m[key]
	if e == nil {
		r.mu.Unlock()
		return
	}
	e.n--
	if e.n > 0 {
		r.mu.Unlock()
		return
	}
	delete(r.m, key)
	clean := e.clean
	r.mu.Unlock()
	e.release(clean)
}

// procStart is the start time of process pid in clock ticks after boot
// (field 22 of /proc/PID/stat), or -1 when it cannot be read.
func procStart(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): field 22 is f[19].
	if len(f) < 20 {
		return -1
	}
	v, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return -1
	}
	return v
}
