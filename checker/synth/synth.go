// Package synth generates synthetic histories of clients driving a correct
// lock with leases (optionally with one injected anomaly), for benchmarks and
// tests of the checkers and reports. It simulates the clients in virtual
// time; nothing sleeps.
package synth

import (
	"container/heap"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Anomalies that Generate can inject once, in the middle of the history.
const (
	// AnomalyOverlap records an acquire that the lock refused as ok, and the
	// client then adds and releases: overlapping holds and a
	// non-linearizable lock.
	AnomalyOverlap = "overlap"
	// AnomalyLost leaves one acknowledged element out of a final read.
	AnomalyLost = "lost"
)

// Ways a history leaves lock 0 held with nobody to release it, once, in the
// middle of the history (Config.Stuck): what the liveness check must find.
const (
	// StuckWrite: the holder's add comes back unknown; its process is
	// retired with the grant.
	StuckWrite = "write"
	// StuckAcquire: an acquire that took effect is answered unknown.
	StuckAcquire = "acquire"
	// StuckRelease: a release that did not take effect is answered unknown.
	StuckRelease = "release"
	// StuckKill: the holder's process is killed between operations
	// (a start-client-kill line); its client goes on as a new process.
	StuckKill = "kill"
)

// Config describes a history.
type Config struct {
	Events  int // lines, about (default 10000)
	Clients int // concurrent clients (default 10)
	Locks   int // lock names (default 1)
	// FailRate and InfoRate are the chances that an acquire that would have
	// been granted fails or has an unknown outcome instead (of which half
	// take effect); an acquire of a held lock always fails.
	FailRate, InfoRate float64
	Lease              time.Duration // default 1s; 0 < Lease
	Seed               uint64
	Anomaly            string        // "", AnomalyOverlap or AnomalyLost
	Nemesis            time.Duration // a partition window every this long (0: none)
	Promise            history.Promise
	LockName           func(i int) string // default "l<i>"
	// Stuck leaves lock 0 held by a process that will never release it,
	// once (StuckWrite, StuckAcquire, StuckRelease, StuckKill): with a
	// lease it frees at the lease's end, with NoLease never.
	Stuck string
	// NoLease grants without a lease (lease_ms absent): a grant is held
	// until released.
	NoLease bool
}

func (c *Config) defaults() {
	if c.Events <= 0 {
		c.Events = 10000
	}
	if c.Clients <= 0 {
		c.Clients = 10
	}
	if c.Locks <= 0 {
		c.Locks = 1
	}
	if c.Lease <= 0 {
		c.Lease = time.Second
	}
	if c.LockName == nil {
		c.LockName = func(i int) string { return "l" + strconv.Itoa(i) }
	}
}

// Ops generates a history in memory.
func Ops(cfg Config) []history.Op {
	var out []history.Op
	_ = Generate(cfg, func(op history.Op) error { out = append(out, op); return nil })
	return out
}

type client struct {
	id, proc int
	at       int64 // time of its next event
	step     int   // what it does next
	lock     int
	token    int64
	seq      int // tie-break for the heap
	elem     int64
}

type clients []*client

func (c clients) Len() int { return len(c) }
func (c clients) Less(i, j int) bool {
	if c[i].at != c[j].at {
		return c[i].at < c[j].at
	}
	return c[i].id < c[j].id
}
func (c clients) Swap(i, j int) { c[i], c[j] = c[j], c[i] }
func (c *clients) Push(x any)   { *c = append(*c, x.(*client)) }
func (c *clients) Pop() any     { o := *c; x := o[len(o)-1]; *c = o[:len(o)-1]; return x }
func (c clients) top() *client  { return c[0] }

type lockSim struct {
	owner    int // process; -1 free
	expiry   int64
	fromInfo bool // the owner's acquire was recorded as info
	leaving  bool // the owner invoked its release
	elems    []int64
}

// Client steps.
const (
	stInvokeAcquire = iota
	stCompleteAcquire
	stInvokeAdd
	stCompleteAdd
	stInvokeRelease
	stCompleteRelease
)

// Generate emits a history, line by line in time order, to emit.
func Generate(cfg Config, emit func(history.Op) error) error {
	cfg.defaults()
	r := rand.New(rand.NewPCG(cfg.Seed, 0x10c4))
	var idx, now int64
	out := func(op history.Op) error {
		op.Index = idx
		op.Time = now
		idx++
		return emit(op)
	}
	m, _ := json.Marshal(history.Meta{Test: "synth", Lock: "synthetic", Promise: cfg.Promise, Seed: int64(cfg.Seed)})
	if err := out(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.FMeta, Value: m}); err != nil {
		return err
	}
	locks := make([]lockSim, cfg.Locks)
	for i := range locks {
		locks[i].owner = -1
	}
	lat := func() int64 { return int64(200_000 + r.ExpFloat64()*1_500_000) } // ~1.7ms
	cs := make(clients, cfg.Clients)
	for i := range cs {
		cs[i] = &client{id: i, proc: i, at: int64(r.IntN(1_000_000))}
	}
	heap.Init(&cs)
	nextProc := cfg.Clients
	var elem int64
	budget := int64(cfg.Events) - int64(cfg.Locks)*2 - 1
	leaseNS := cfg.Lease.Nanoseconds()
	leaseMS := cfg.Lease.Milliseconds()
	if cfg.NoLease {
		leaseNS, leaseMS = 1<<60, 0
	}
	injected := false
	stuck := false // cfg.Stuck dealt
	// stuckNow says whether client c, at this step on its lock, is the
	// one to leave lock 0 held.
	stuckNow := func(c *client, way string) bool {
		if cfg.Stuck != way || stuck || c.lock != 0 || idx <= budget/2 {
			return false
		}
		stuck = true
		return true
	}
	retire := func(c *client) {
		c.proc = nextProc
		nextProc++
		c.step, c.at = stInvokeAcquire, now+lat()
	}
	var lastNemesis int64
	partitioned := false
	// invokes remember the invocation time of each client's current op.
	inv := make([]int64, cfg.Clients)
	for idx < budget || !allIdle(cs) {
		c := cs.top()
		now = c.at
		if cfg.Nemesis > 0 && now-lastNemesis >= cfg.Nemesis.Nanoseconds()/2 {
			lastNemesis = now
			// The nemesis's own shape (docs/history.md): n1 isolated.
			op := history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.StartF("partition"), Node: "n1,n2,n3",
				Value: json.RawMessage(`{"kind":"isolate","grudge":{"n1":["n2","n3"],"n2":["n1"],"n3":["n1"]}}`)}
			if partitioned {
				op.F, op.Value = history.StopF("partition"), json.RawMessage(`{"kind":"isolate"}`)
			}
			partitioned = !partitioned
			if err := out(op); err != nil {
				return err
			}
		}
		l := &locks[c.lock]
		name := cfg.LockName(c.lock)
		var err error
		switch c.step {
		case stInvokeAcquire:
			if idx >= budget {
				// Wind down: this client stops.
				c.at = 1<<62 + int64(c.id)
				heap.Fix(&cs, 0)
				continue
			}
			c.lock = r.IntN(cfg.Locks)
			name = cfg.LockName(c.lock)
			inv[c.id] = now
			err = out(history.Op{Process: c.proc, Type: history.Invoke, F: history.FAcquire, Lock: name})
			c.step, c.at = stCompleteAcquire, now+lat()
		case stCompleteAcquire:
			free := l.owner == -1 || l.expiry <= now
			x := r.Float64()
			switch {
			case free && stuckNow(c, StuckAcquire):
				// Took effect, answered unknown.
				l.owner, l.expiry, l.fromInfo, l.leaving = c.proc, inv[c.id]+leaseNS, true, false
				err = out(history.Op{Process: c.proc, Type: history.Info, F: history.FAcquire, Lock: name, Error: "timeout"})
				retire(c)
			case free && x < cfg.InfoRate:
				// Unknown outcome; half the time it took effect, blocking
				// the lock until its lease runs out.
				if r.IntN(2) == 0 {
					l.owner, l.expiry, l.fromInfo, l.leaving = c.proc, inv[c.id]+leaseNS, true, false
				}
				err = out(history.Op{Process: c.proc, Type: history.Info, F: history.FAcquire, Lock: name, Error: "timeout"})
				c.proc = nextProc
				nextProc++
				c.step, c.at = stInvokeAcquire, now+lat()
			case free && x < cfg.InfoRate+cfg.FailRate:
				err = out(history.Op{Process: c.proc, Type: history.Fail, F: history.FAcquire, Lock: name, Error: "unavailable"})
				c.step, c.at = stInvokeAcquire, now+lat()
			case free:
				l.owner, l.expiry, l.fromInfo, l.leaving = c.proc, inv[c.id]+leaseNS, false, false
				err = out(history.Op{Process: c.proc, Type: history.OK, F: history.FAcquire, Lock: name, LeaseMS: leaseMS})
				c.step, c.at = stInvokeAdd, now+lat()/4
			case cfg.Anomaly == AnomalyOverlap && !injected && idx > budget/2 && !l.fromInfo && !l.leaving:
				// The bug: granted although another process holds it (one
				// that knows it does: an info acquire's grant would explain
				// nothing) and is not releasing it (its hold already ended).
				injected = true
				err = out(history.Op{Process: c.proc, Type: history.OK, F: history.FAcquire, Lock: name, LeaseMS: leaseMS})
				c.step, c.at = stInvokeAdd, now+lat()/4
			default:
				err = out(history.Op{Process: c.proc, Type: history.Fail, F: history.FAcquire, Lock: name, Error: "held"})
				c.step, c.at = stInvokeAcquire, now+lat()*3
			}
		case stInvokeAdd:
			if l.owner == c.proc && stuckNow(c, StuckKill) {
				v, _ := json.Marshal(history.ClientKillStart{Client: c.id, InFlight: "hold", Lock: name, Process: c.proc, RestartMS: 1})
				err = out(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.StartF(history.KindClientKill), Value: v})
				retire(c)
				break
			}
			elem++
			c.elem = elem
			v, _ := json.Marshal(elem)
			inv[c.id] = now
			err = out(history.Op{Process: c.proc, Type: history.Invoke, F: history.FAdd, Lock: name, Value: v})
			c.step, c.at = stCompleteAdd, now+lat()
		case stCompleteAdd:
			if l.owner == c.proc && stuckNow(c, StuckWrite) {
				// Its outcome unknown: say it did not land.
				v, _ := json.Marshal(c.elem)
				err = out(history.Op{Process: c.proc, Type: history.Info, F: history.FAdd, Lock: name, Value: v, Error: "timeout"})
				retire(c)
				break
			}
			l.elems = append(l.elems, c.elem)
			v, _ := json.Marshal(c.elem)
			err = out(history.Op{Process: c.proc, Type: history.OK, F: history.FAdd, Lock: name, Value: v})
			c.step, c.at = stInvokeRelease, now+lat()/4
		case stInvokeRelease:
			if l.owner == c.proc {
				l.leaving = true
			}
			inv[c.id] = now
			err = out(history.Op{Process: c.proc, Type: history.Invoke, F: history.FRelease, Lock: name})
			c.step, c.at = stCompleteRelease, now+lat()
		case stCompleteRelease:
			if l.owner == c.proc && stuckNow(c, StuckRelease) {
				// Did not take effect, answered unknown.
				l.leaving = false
				err = out(history.Op{Process: c.proc, Type: history.Info, F: history.FRelease, Lock: name, Error: "timeout"})
				retire(c)
				break
			}
			if l.owner == c.proc {
				l.owner = -1
			}
			err = out(history.Op{Process: c.proc, Type: history.OK, F: history.FRelease, Lock: name})
			c.step, c.at = stInvokeAcquire, now+lat()
		}
		if err != nil {
			return err
		}
		heap.Fix(&cs, 0)
	}
	if partitioned {
		if err := out(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.StopF("partition"), Node: "n1,n2,n3", Value: json.RawMessage(`{"kind":"isolate"}`)}); err != nil {
			return err
		}
	}
	// Final reads, one per lock, by fresh processes.
	for i := range locks {
		name := cfg.LockName(i)
		elems := locks[i].elems
		if cfg.Anomaly == AnomalyLost && i == 0 && len(elems) > 0 {
			elems = elems[1:]
		}
		if elems == nil {
			elems = []int64{}
		}
		now += 1_000_000
		if err := out(history.Op{Process: nextProc, Type: history.Invoke, F: history.FRead, Lock: name}); err != nil {
			return err
		}
		v, _ := json.Marshal(elems)
		now += 1_000_000
		if err := out(history.Op{Process: nextProc, Type: history.OK, F: history.FRead, Lock: name, Value: v}); err != nil {
			return err
		}
		nextProc++
	}
	return nil
}

func allIdle(cs clients) bool {
	return cs.top().at >= 1<<62
}
