package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/faultkind"
	"github.com/lockcheck/lockcheck/history"
)

// The membership kinds move ranges while the clients run: a spare node
// bootstraps into the ring (join), a member decommissions (leave), a killed
// member is replaced by a node taking its own address (replace), a killed
// member is removed by the others (remove). Each window ends where it
// began, the membership of the start: the spare decommissions again, the
// member that left or was removed bootstraps back from empty data. The
// start line records the ring before, the stop line the ring when the first
// movement's streaming was done and the ring after. CEP-14: "LWTs have
// never guaranteed linearizability across range movements".
const (
	Join    = history.KindJoin
	Leave   = history.KindLeave
	Replace = history.KindReplace
	Remove  = history.KindRemove
)

// MemberNode is a node whose membership in the ring a fault changes
// (cluster.Node implements it): the node action of CapMembership. Each
// method returns when its streaming is done.
type MemberNode interface {
	// Ring is the ring as the cluster's running nodes see it: node name ->
	// state ("UN", "DN", "UJ", "UL"); a node out of the ring is absent.
	Ring(ctx context.Context) (map[string]string, error)
	// Join bootstraps the node (a spare, or a member out of the ring) from
	// empty data.
	Join(ctx context.Context) error
	// Decommission streams the node's ranges away (nodetool decommission)
	// and stops it.
	Decommission(ctx context.Context) error
	// Replace kills the node and bootstraps it from empty data in its own
	// place (-Dcassandra.replace_address_first_boot).
	Replace(ctx context.Context) error
	// Remove kills the node and has another member remove it (nodetool
	// removenode).
	Remove(ctx context.Context) error
	// WaitWhole waits (boundedly) until every other node in the ring is
	// up, as an operator waits before a range movement: a node killed
	// during the window is back.
	WaitWhole(ctx context.Context) error
	// Finish completes a movement of the node that failed (a node it
	// streamed with was killed): into the ring (in: a bootstrap left
	// joining resumes, or on 5.0, which refuses that, starts again from
	// empty data) or out of it (a decommission runs again and resumes).
	// It says how.
	Finish(ctx context.Context, in bool) (string, error)
	// ResetMembership brings the ring back to its starting membership
	// (spares out, members in), whatever a killed harness left.
	ResetMembership(ctx context.Context) (bool, error)
}

// membershipWait bounds one window's movements: a bootstrap and a
// decommission each wait out the ring delay and stream; on a loaded
// machine a node's start alone takes a minute, and a movement waits for a
// killed node's restart (2 minutes at load 30) and may run twice when a
// kill failed it. The stop's own bound (restartStopTimeout after the
// hold) ends a window that takes longer; the heal finishes it.
const membershipWait = 8 * time.Minute

func memberKind(name, color, doc string, start history.MemberStart, newInj func() Injector) Kind {
	return Kind{
		Name: name, Scope: ScopeNode, Color: color, Doc: doc,
		Needs:      []Capability{CapMembership},
		Check:      needSpare,
		Restarts:   true,
		Streams:    true,
		StartValue: start,
		StopValue: history.MemberStop{Moved: map[string]string{"n1": "UN", "n2": "UN", "n3": "UN", "n4": "UN", "n5": "UN"}, MS: 61000,
			Node: start.Node, Ring: start.Ring, StreamedMS: 24000},
		Cause: &movementCause,
		New:   newInj,
	}
}

// movementCause: a replica set that changes under an LWT can lose a
// Paxos state, which shows as two grants.
var movementCause = faultkind.Cause{Anomalies: faultkind.TwoGrants, Explain: explainMovement}

// explainMovement names the range movement of a membership window.
func explainMovement(w history.FaultWindow, a faultkind.Anomaly) (string, bool) {
	v, ok := faultkind.Decode[history.MemberStart](w.Value)
	if !ok || v.Node == "" {
		return "", false
	}
	return fmt.Sprintf("ranges moved while the lock was taken: %s (%s, %s): a replica set that changes under an LWT can "+
		"miss a proposal accepted by the replicas it no longer holds (CEP-14: LWTs have never guaranteed linearizability "+
		"across range movements; Paxos v2 repairs Paxos state on topology changes unless skip_paxos_repair_on_topology_change)",
		v.Node, w.Kind, v.How), true
}

var (
	fourUN       = map[string]string{"n1": "UN", "n2": "UN", "n3": "UN", "n4": "UN"}
	joinKind     = memberKind(Join, "#17becf", "A spare node bootstraps into the ring (streaming its ranges from the others), then decommissions again: two range movements.", history.MemberStart{How: "bootstrap, then decommission", Node: "n5", Ring: fourUN}, func() Injector { return &membership{kind: Join} })
	leaveKind    = memberKind(Leave, "#9edae5", "A member decommissions (nodetool decommission: its ranges stream to the others), then bootstraps back from empty data with its own token.", history.MemberStart{How: "decommission, then bootstrap", Node: "n2", Ring: fourUN}, func() Injector { return &membership{kind: Leave} })
	replaceKind  = memberKind(Replace, "#c49c94", "A member is killed, its data wiped, and it starts again in its own place with -Dcassandra.replace_address_first_boot, streaming its ranges from the others.", history.MemberStart{How: "kill, then bootstrap in its own place", Node: "n3", Ring: fourUN}, func() Injector { return &membership{kind: Replace} })
	removeKind   = memberKind(Remove, "#dbdb8d", "A member is killed and another removes it from the ring (nodetool removenode: the others stream its ranges among themselves); then it bootstraps back from empty data.", history.MemberStart{How: "kill, removenode, then bootstrap", Node: "n1", Ring: fourUN}, func() Injector { return &membership{kind: Remove} })
	memberHowFor = map[string]string{Join: joinKind.StartValue.(history.MemberStart).How, Leave: leaveKind.StartValue.(history.MemberStart).How,
		Replace: replaceKind.StartValue.(history.MemberStart).How, Remove: removeKind.StartValue.(history.MemberStart).How}
)

// needSpare refuses the membership kinds without a spare node: the ring
// keeps its replication factor while one member is out only with one.
func needSpare(e *Env) error {
	if len(e.Spares) == 0 {
		return errors.New("needs a spare node (`cluster up --nodes 4 --spares 1`)")
	}
	return nil
}

type membership struct{ kind string }

func memberOf(t Target) (MemberNode, error) {
	m, ok := t.Node.(MemberNode)
	if !ok {
		return nil, fmt.Errorf("node %s cannot change the ring's membership", t.Name)
	}
	return m, nil
}

func (p *membership) Start(ctx context.Context, e *Env, hold time.Duration) (Stop, error) {
	// Every draw before anything that waits.
	pool := e.Targets
	if p.kind == Join {
		pool = e.Spares
	}
	t := pool[e.Sched.IntN(len(pool))]
	if v, ok := given[history.MemberStart](e); ok {
		// A replay: the node the history moved.
		i := slices.IndexFunc(pool, func(c Target) bool { return c.Name == v.Node })
		if i < 0 {
			return nil, fmt.Errorf("nemesis: %s: the schedule names node %q, which this cluster cannot move", p.kind, v.Node)
		}
		t = pool[i]
	}
	m, err := memberOf(t)
	if err != nil {
		return nil, err
	}
	var first, second movement
	join := movement{"bootstrap", m.Join, true, true}
	decommission := movement{"decommission", m.Decommission, false, true}
	switch p.kind {
	case Join:
		first, second = join, decommission
	case Leave:
		first, second = decommission, join
	case Replace:
		first = movement{name: "replace", run: m.Replace}
	case Remove:
		first, second = movement{name: "removenode", run: m.Remove}, join
	}
	ring, err := m.Ring(ctx)
	if err != nil {
		return nil, fmt.Errorf("nemesis: %s: ring: %w", p.kind, err)
	}
	if err := e.Record(history.StartF(p.kind), history.MemberStart{How: memberHowFor[p.kind], Node: t.Name, Ring: ring}, []string{t.Name}); err != nil {
		return nil, err
	}
	// The movements run on their own: one can outlast the stop's wait,
	// and the heal (ResetMembership) then waits for it to end.
	begin := time.Now()
	streamed := e.phaseReporter() // a step may follow the streaming's end
	v := history.MemberStop{Node: t.Name}
	done := make(chan struct{})
	go func() {
		defer close(done)
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), membershipWait)
		defer cancel()
		var errs []error
		errs = append(errs, p.move(mctx, e, m, t.Name, first, &v))
		v.StreamedMS = time.Since(begin).Milliseconds()
		v.Moved = ringNow(ctx, m)
		if errs[0] == nil {
			// The ring as moved holds: a step that follows it (a
			// kill while the ring holds the joined node) may start.
			// A first movement that failed for good is no streaming
			// done: its followers are not dealt.
			streamed(Streamed)
		}
		if second.run != nil && errs[0] == nil {
			// The moved ring holds for the rest of the window.
			if rest := hold - time.Since(begin); rest > 0 {
				sleep(mctx, rest)
			}
			errs = append(errs, p.move(mctx, e, m, t.Name, second, &v))
		}
		if err := errors.Join(errs...); err != nil {
			v.Error = err.Error()
		}
		v.Ring = ringNow(ctx, m)
		v.MS = time.Since(begin).Milliseconds()
	}()
	return func(ctx context.Context) error {
		select {
		case <-done:
		case <-ctx.Done():
			// Recorded as it stands; the heal finishes the movement.
			return errors.Join(fmt.Errorf("nemesis: %s of %s: still moving: %w", p.kind, t.Name, ctx.Err()),
				e.Record(history.StopF(p.kind), history.MemberStop{Node: t.Name, Error: "still moving when the stop gave up", MS: time.Since(begin).Milliseconds()}, []string{t.Name}))
		}
		var err error
		if v.Error != "" {
			err = fmt.Errorf("nemesis: %s of %s: %s", p.kind, t.Name, v.Error)
		}
		return errors.Join(err, e.Record(history.StopF(p.kind), v, []string{t.Name}))
	}, nil
}

// ringNow is the ring for a stop line, read with time of its own: the
// movements' time may be spent (a window that outlasted membershipWait
// still says where the ring stood).
func ringNow(ctx context.Context, m MemberNode) map[string]string {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	ring, _ := m.Ring(rctx)
	return ring
}

// movement is one range movement of a window: finish says a failed one
// can be completed by MemberNode.Finish, into the ring (in) or out of it.
type movement struct {
	name   string
	run    func(context.Context) error
	in     bool
	finish bool
}

// move waits for the ring to be whole (a node killed inside the window
// back up), runs the movement and, when it failed and can be, completes
// it as an operator would, noting in v what failed and how it was healed:
// a kill that lands in a stream fails the movement itself (the bootstrap
// is left joining, the decommission leaving), and no later movement can
// start until it ends.
func (p *membership) move(ctx context.Context, e *Env, m MemberNode, node string, mv movement, v *history.MemberStop) error {
	w := time.Now()
	if err := m.WaitWhole(ctx); err != nil && e.Log != nil {
		e.Log.Warn("nemesis: a range movement on a ring not whole", "kind", p.kind, "node", node, "err", err)
	}
	v.WaitedMS += time.Since(w).Milliseconds()
	err := mv.run(ctx)
	if err == nil || !mv.finish || ctx.Err() != nil {
		return err
	}
	how, ferr := m.Finish(ctx, mv.in)
	v.Resumed = append(v.Resumed, fmt.Sprintf("%s of %s failed (%v); healed by %s", mv.name, node, err, how))
	if ferr != nil {
		return fmt.Errorf("%s: %w; then %s: %w", mv.name, err, how, ferr)
	}
	return nil
}

// Reset brings the whole ring back to its starting membership; on the
// second node and after, it finds nothing to do.
func (p *membership) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	m, err := memberOf(t)
	if err != nil {
		return false, err
	}
	return m.ResetMembership(ctx)
}
