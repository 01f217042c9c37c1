package checker

import (
	"context"
	"sort"
	"sync"

	"github.com/lockcheck/lockcheck/history"
)

// The checks of different locks share nothing but the processes that take
// them, so the locks are split over shards, each an engine of its own on a
// goroutine of its own, fed in file order by multi. What a process carries
// from one lock to another is only what the history's rules already fix
// (one call in flight; retired after an info), so a shard sees all it needs:
// the invocations and completions of its locks, the meta line, and every
// info completion (to retire the process, leaving the locks it held with no
// lease stuck) and completion without a lock (to
// find its invocation). The number of shards is fixed, not the number of
// CPUs, so that a result never depends on the machine.
const nShards = 4

const batchOps = 512

// multi feeds the shards and merges what they found.
type multi struct {
	ctx       context.Context
	cfg       config
	holdsOnly bool
	shards    []*engine
	in        []chan []history.Op
	buf       [][]history.Op
	free      chan []history.Op
	wg        sync.WaitGroup
	lin       *linRunner
	lastLock  string // shardOf's cache
	lastShard int
	events    int
	nemesis   int
	end       int64
	meta      *history.Meta
	// setupFailed is the cause of an FSetupFailed line: the run never
	// started, and its history vouches for nothing.
	setupFailed string
	metaSeen    bool
	reg         *regChecker // register operations: checked apart from the locks
	live        *liveness   // availability and stuck periods (liveness.go)
}

func newMulti(ctx context.Context, cfg config, holdsOnly, keepHolds bool) *multi {
	m := &multi{ctx: ctx, cfg: cfg, holdsOnly: holdsOnly, free: make(chan []history.Op, 4*nShards)}
	if !holdsOnly {
		m.lin = newLinRunner(ctx, cfg)
		m.reg = newRegChecker(ctx, cfg)
		m.live = newLiveness(cfg)
	}
	for range nShards {
		e := newEngine(ctx, cfg)
		e.holdsOnly, e.keepHolds, e.lin = holdsOnly, keepHolds, m.lin
		in := make(chan []history.Op, 4)
		m.shards = append(m.shards, e)
		m.in = append(m.in, in)
		m.buf = append(m.buf, make([]history.Op, 0, batchOps))
		m.wg.Go(func() {
			for b := range in {
				for i := range b {
					e.feed(b[i])
				}
				clear(b)
				select {
				case m.free <- b[:0]:
				default:
				}
			}
			e.finishShard(m.end) // m.end is set before in is closed
		})
	}
	return m
}

// shardOf places a lock; a call without a lock goes by its process.
func (m *multi) shardOf(op *history.Op) int {
	if op.Lock != "" {
		if op.Lock != m.lastLock {
			// FNV-1a: a fixed hash, so that a lock's shard never changes.
			h := uint32(2166136261)
			for i := 0; i < len(op.Lock); i++ {
				h = (h ^ uint32(op.Lock[i])) * 16777619
			}
			m.lastLock, m.lastShard = op.Lock, int(h%nShards)
		}
		return m.lastShard
	}
	return int(uint(op.Process) % nShards)
}

func (m *multi) send(i int, op history.Op) {
	m.buf[i] = append(m.buf[i], op)
	if len(m.buf[i]) >= batchOps {
		m.flush(i)
	}
}

func (m *multi) flush(i int) {
	if len(m.buf[i]) == 0 {
		return
	}
	m.in[i] <- m.buf[i]
	select {
	case b := <-m.free:
		m.buf[i] = b
	default:
		m.buf[i] = make([]history.Op, 0, batchOps)
	}
}

func (m *multi) broadcast(op history.Op) {
	for i := range m.shards {
		m.send(i, op)
	}
}

// feedMeta hands the meta line to every shard ahead of the ops (a history in
// memory may have it anywhere).
func (m *multi) feedMeta(op history.Op) {
	if m.metaSeen {
		return
	}
	m.metaSeen = true
	if m.live != nil {
		m.live.feed(op) // ahead of the ops, as the shards get it
	}
	var meta history.Meta
	if err := jsonUnmarshal(op.Value, &meta); err == nil {
		m.meta = &meta
	}
	m.broadcast(op)
}

// feed takes the next op of a validated history.
func (m *multi) feed(op history.Op) {
	m.end = op.Time
	m.events++
	if m.live != nil {
		m.live.feed(op)
	}
	switch {
	case op.Process < 0:
		m.nemesis++
		switch op.F {
		case history.FMeta:
			m.feedMeta(op)
		case history.FSetupFailed:
			var sf history.SetupFailed
			if jsonUnmarshal(op.Value, &sf) != nil || sf.Cause == "" {
				sf.Cause = "set-up failed"
			}
			m.setupFailed = sf.Cause
		}
	case history.IsRegisterF(op.F):
		// A register's process takes no lock: the shards need none of it.
		if m.reg != nil {
			m.reg.feed(op)
		}
	case op.Type == history.Invoke || (op.Lock != "" && op.Type != history.Info):
		m.send(m.shardOf(&op), op)
	default:
		// An info completion retires its process everywhere; a completion
		// without a lock belongs to whichever shard has its invocation.
		m.broadcast(op)
	}
}

// finish lets the shards finish and merges their results.
func (m *multi) finish() Result {
	for i := range m.shards {
		m.flush(i)
		close(m.in[i])
	}
	m.wg.Wait()
	agg := newEngine(m.ctx, m.cfg)
	agg.holdsOnly, agg.lin, agg.end = m.holdsOnly, m.lin, m.end
	agg.meta = m.meta
	agg.fenced = m.meta != nil && m.meta.Promise == history.PromiseFenced
	agg.st.events, agg.st.nemesis = m.events, m.nemesis
	var visQ []*linQueue
	for _, e := range m.shards {
		agg.keepHolds = e.keepHolds
		agg.pending += e.pending
		agg.holds = append(agg.holds, e.holds...)
		for n, l := range e.locks {
			agg.locks[n] = l
		}
		agg.st.merge(&e.st)
		agg.nOverlap += e.nOverlap
		agg.nHolds += e.nHolds
		agg.nResAnom += e.nResAnom
		agg.noFinal += e.noFinal
		agg.uncovered += e.uncovered
		agg.uncoveredLocks += e.uncoveredLocks
		agg.nFence += e.nFence
		agg.nUnordered += e.nUnordered
		agg.nNoToken += e.nNoToken
		agg.mutex.merge(&e.mutex)
		agg.resource.merge(&e.resource)
		agg.fencing.merge(&e.fencing)
		visQ = append(visQ, e.visQ...)
	}
	n := m.cfg.maxReports
	agg.mutex.trim(n, n)
	agg.resource.trim(n, 10*n)
	agg.fencing.trim(n, n)
	sort.Slice(visQ, func(i, j int) bool { return visQ[i].l.name < visQ[j].l.name })
	if len(visQ) > m.cfg.visualize {
		visQ = visQ[:max(m.cfg.visualize, 0)]
	}
	if m.holdsOnly {
		sortHolds(agg.holds)
	}
	if m.reg != nil {
		agg.st.merge(&m.reg.st)
		agg.pending += len(m.reg.open)
	}
	res := agg.assemble(visQ)
	res.Timeline = m.timeline()
	if m.reg != nil {
		if out, vis, ok := m.reg.finish(m.end); ok {
			addRegister(&res, out, vis, len(agg.locks))
		}
	}
	if m.live != nil {
		res.Liveness = m.live.finish()
	}
	if m.setupFailed != "" && !m.holdsOnly {
		res.SetupFailed = m.setupFailed
		if res.Verdict == Valid {
			res.Verdict = Unknown
		}
	}
	return res
}

func (o *checkOutput) merge(p *checkOutput) {
	o.anomalies = append(o.anomalies, p.anomalies...)
	o.findings = append(o.findings, p.findings...)
	o.omitted += p.omitted
}

// trim keeps the first max anomalies of each kind (by rank and start, as
// reported) and the first maxFindings findings: each shard kept its first
// max, so the merge may hold more.
func (o *checkOutput) trim(maxKind, maxFindings int) {
	sortAnomalies(o.anomalies)
	perKind := map[string]int{}
	kept := o.anomalies[:0]
	for _, a := range o.anomalies {
		if perKind[a.Kind] >= maxKind {
			o.omitted++
			continue
		}
		perKind[a.Kind]++
		kept = append(kept, a)
	}
	o.anomalies = kept
	if len(o.findings) > maxFindings {
		sortAnomalies(o.findings)
		o.findings = o.findings[:maxFindings]
	}
}
