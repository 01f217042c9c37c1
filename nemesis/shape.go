package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/netshape"
)

// The shaping kinds make requests slow rather than cut: the way real locks
// most often break (an overloaded coordinator, a slow link), which the
// suite otherwise met only when the machine happened to be loaded. Each
// fault is one shaping value (history.Shaping: delay, jitter, rate) applied
// to a node's links by one backend method (ShapeNode.Shape), as Jepsen's
// net/shape! is. The shaping is egress: what the shaped node sends its
// peers waits, so a coordinator's requests to the replicas (and its
// answers to its clients) land late.
const (
	NetDelay      = history.KindNetDelay
	NetRate       = history.KindNetRate
	CoordNetDelay = history.KindCoordNetDelay
)

// ShapeNode is a node whose links can be shaped (cluster.Node,
// sshnode.Node): the node action of CapNetDelay and CapNetRate. Shape
// replaces the node's whole shaping; Unshape removes whatever any process
// left and says whether it found some.
type ShapeNode interface {
	Shape(ctx context.Context, s netshape.Shape) error
	Unshape(ctx context.Context) (bool, error)
}

// NetBounds bound what the shaping kinds draw: the delay log-uniform in
// [DelayMin, DelayMax], the jitter uniform in [0, Jitter] (at most the
// delay drawn), the rate log-uniform in [RateMin, RateMax] kbit/s.
type NetBounds struct {
	DelayMin, DelayMax time.Duration
	Jitter             time.Duration
	RateMin, RateMax   int
}

// DefaultNetBounds: delays from a slow link's to past a write timeout's
// share of the lease (seconds), a jitter of up to 50 ms, and rates from a
// modem's to a slow WAN's.
var DefaultNetBounds = NetBounds{DelayMin: 200 * time.Millisecond, DelayMax: 2 * time.Second, Jitter: 50 * time.Millisecond,
	RateMin: 64, RateMax: 1024}

// Validate is the one line that says what makes no sense in b: a
// negative bound, a minimum above its maximum, a jitter above the smallest
// delay, a rate of zero.
func (b NetBounds) Validate() error {
	if err := netshape.ValidateBounds(b.DelayMin, b.Jitter, b.RateMin, false); err != nil {
		return fmt.Errorf("nemesis: net bounds: %w", err)
	}
	switch {
	case b.DelayMin == 0:
		return errors.New("nemesis: net bounds: the smallest delay must be positive")
	case b.DelayMax < b.DelayMin:
		return fmt.Errorf("nemesis: net bounds: delay %s..%s: the maximum is below the minimum", b.DelayMin, b.DelayMax)
	case b.RateMax < b.RateMin:
		return fmt.Errorf("nemesis: net bounds: rate %d..%d kbit/s: the maximum is below the minimum", b.RateMin, b.RateMax)
	}
	return nil
}

// WithNetBounds bounds the shaping kinds' draws (default DefaultNetBounds).
func WithNetBounds(b NetBounds) Option { return func(n *Nemesis) { n.env.Net = b } }

var netDelayKind = Kind{
	Name: NetDelay, Scope: ScopeNode, Color: "#b07aa1",
	Doc: "Adds latency with jitter (tc netem, or lockcheck-shaper on an NFQUEUE where the kernel has no netem) to what " +
		"chosen nodes send the other nodes, or to what chosen nodes send the harness's clients: requests are slow, not lost.",
	Needs: []Capability{CapNetDelay},
	StartValue: history.ShapeStart{Links: Grudge{"n2": {"n1", "n3"}}, Mode: "nodes",
		Shape: history.Shaping{DelayMS: 450, JitterMS: 30}},
	StopValue: history.ShapeStop{Mode: "nodes"},
	New:       func() Injector { return &shaper{kind: NetDelay, delay: true} },
}

var netRateKind = Kind{
	Name: NetRate, Scope: ScopeNode, Color: "#9c755f",
	Doc: "Limits the bandwidth (tc htb) of what chosen nodes send the other nodes, or the harness's clients: large " +
		"messages (streams, batches, reads of big rows) queue behind each other.",
	Needs:      []Capability{CapNetRate},
	StartValue: history.ShapeStart{Links: Grudge{"n1": {"clients"}}, Mode: "clients", Shape: history.Shaping{RateKbit: 256}},
	StopValue:  history.ShapeStop{Mode: "clients"},
	New:        func() Injector { return &shaper{kind: NetRate, rate: true} },
}

var coordNetDelayKind = Kind{
	Name: CoordNetDelay, Scope: ScopeNode, Color: "#8cd17d",
	Doc: "Adds latency with jitter to everything the coordinator of one group of pinned clients sends, to the other " +
		"nodes and to the clients: the overloaded coordinator, whose Paxos rounds and writes reach the replicas late. " +
		"It is aimed at the coordinator of a client that holds a lock when it starts, if one does.",
	Needs: []Capability{CapNetDelay},
	Pins:  true,
	StartValue: history.ShapeStart{Clients: []int{1, 4}, Links: Grudge{"n2": {"clients", "n1", "n3"}}, Mode: "coord", Node: "n2",
		Shape: history.Shaping{DelayMS: 1200, JitterMS: 40}},
	StopValue: history.ShapeStop{Mode: "coord"},
	New:       func() Injector { return &shaper{kind: CoordNetDelay, delay: true, coord: true} },
}

// shaper is the injector of the shaping kinds: what it draws differs
// (a delay, a rate; chosen nodes, or a coordinator), what it does is one
// Shape per node and, at the stop, one Unshape.
type shaper struct {
	kind        string
	delay, rate bool
	coord       bool
}

// draw takes every random choice of one shaping fault from e.Sched: the
// shaping, then who is shaped (as loss chooses: a non-empty set of nodes
// whose links to the others, or to the clients, are shaped; or one
// coordinator of pinned clients, all of its links).
func (s *shaper) draw(e *Env) (history.ShapeStart, error) {
	var sh history.Shaping
	b := e.Net
	if s.delay {
		d := logUniform(e.Sched, b.DelayMin, b.DelayMax)
		j := time.Duration(0)
		if b.Jitter > 0 {
			j = time.Duration(e.Sched.Int64N(int64(min(b.Jitter, d)) + 1))
		}
		sh.DelayMS, sh.JitterMS = max(d.Milliseconds(), 1), j.Milliseconds()
	}
	if s.rate {
		sh.RateKbit = int(logUniform(e.Sched, time.Duration(b.RateMin), time.Duration(b.RateMax)))
	}
	if s.coord {
		nodes, groups := coordGroups(e)
		node := nodes[e.Sched.IntN(len(nodes))]
		// Aimed at a holder's coordinator when a client holds now (as
		// coord-clock aims at a contender's): the slow coordinator then
		// carries a critical section's writes, which is what a lease
		// cannot survive. Which client holds depends on the run's timing:
		// Pick, not Sched, draws it.
		if e.Clients != nil {
			var cands []string
			for _, h := range e.Clients.Holders() {
				if n, ok := e.Pins[h]; ok && slices.Contains(nodes, n) && !slices.Contains(cands, n) {
					cands = append(cands, n)
				}
			}
			if len(cands) > 0 && e.Pick != nil {
				node = cands[e.Pick.IntN(len(cands))]
			}
		}
		return history.ShapeStart{Clients: groups[node], Links: coordLinks(e, node), Mode: "coord", Node: node, Shape: sh}, nil
	}
	mode, links, err := drawLinks(e, s.kind)
	if err != nil {
		return history.ShapeStart{}, err
	}
	return history.ShapeStart{Links: links, Mode: mode, Shape: sh}, nil
}

// coordLinks are all of a coordinator's links: to the clients and to the
// other nodes.
func coordLinks(e *Env, node string) Grudge {
	links := []string{GatewayName}
	for _, t := range e.Targets {
		if t.Name != node {
			links = append(links, t.Name)
		}
	}
	return Grudge{node: links}
}

// fromStep is the step's value when a schedule gives one that shapes
// something: a replay shapes the same links the same way.
func (s *shaper) fromStep(e *Env, drawn history.ShapeStart) (history.ShapeStart, error) {
	v, ok := given[history.ShapeStart](e)
	if !ok || len(v.Links) == 0 {
		return drawn, nil
	}
	sh := v.Shape
	if err := netshape.ValidateBounds(time.Duration(sh.DelayMS)*time.Millisecond, time.Duration(sh.JitterMS)*time.Millisecond,
		sh.RateKbit, true); err != nil {
		return v, fmt.Errorf("nemesis: the schedule's %s: %w", s.kind, err)
	}
	if s.coord {
		nodes, groups := coordGroups(e)
		if !slices.Contains(nodes, v.Node) {
			return v, fmt.Errorf("nemesis: the schedule slows node %s, which coordinates no client of this run", v.Node)
		}
		v.Clients = groups[v.Node]
	}
	return v, nil
}

func (s *shaper) Start(ctx context.Context, e *Env, hold time.Duration) (Stop, error) {
	drawn, err := s.draw(e)
	if err != nil {
		return nil, err
	}
	v, err := s.fromStep(e, drawn)
	if err != nil {
		return nil, err
	}
	var shaped []string
	var unshape func(context.Context) error
	if s.coord && aimsAtWrite(e) {
		// The delay drawn above; the node is the coordinator of the next
		// holder to write, shaped before that write is sent.
		err = atHoldersWrite(ctx, e, hold, s.kind, func(node string, clients []int) error {
			v.Node, v.Clients, v.Links = node, clients, coordLinks(e, node)
			var aerr error
			shaped, unshape, aerr = s.apply(ctx, e, v)
			return aerr
		})
		if err != nil && unshape == nil {
			return nil, err
		}
	} else {
		shaped, unshape, err = s.apply(ctx, e, v)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("nemesis: %s: %w", s.kind, err), unshape(context.WithoutCancel(ctx)))
	}
	applied := Grudge{}
	for _, n := range shaped {
		applied[n] = v.Links[n]
	}
	v.Links = applied
	if err := e.Record(history.StartF(s.kind), v, shaped); err != nil {
		return nil, errors.Join(err, unshape(context.WithoutCancel(ctx)))
	}
	return func(ctx context.Context) error {
		err := unshape(ctx)
		if err != nil {
			err = fmt.Errorf("nemesis: heal %s: %w", s.kind, err)
		}
		return errors.Join(err, e.Record(history.StopF(s.kind), history.ShapeStop{Mode: v.Mode}, shaped))
	}, nil
}

// apply shapes the links of v on each node it names: the nodes shaped, and
// the undo of all of them (also when err says some could not be).
func (s *shaper) apply(ctx context.Context, e *Env, v history.ShapeStart) (shaped []string, unshape func(context.Context) error, err error) {
	ips := map[string]string{GatewayName: e.Gateway}
	for _, t := range e.Targets {
		ips[t.Name] = t.IP
	}
	var names []string
	for _, t := range e.Targets {
		if len(v.Links[t.Name]) > 0 {
			names = append(names, t.Name)
		}
	}
	shaped, err = onNodes(ctx, e, names, func(t Target) error {
		sn, ok := t.Node.(ShapeNode)
		if !ok {
			return fmt.Errorf("node %s cannot shape its links", t.Name)
		}
		ns := netshape.Shape{Delay: time.Duration(v.Shape.DelayMS) * time.Millisecond,
			Jitter: time.Duration(v.Shape.JitterMS) * time.Millisecond, RateKbit: v.Shape.RateKbit}
		for _, p := range v.Links[t.Name] {
			if ip := ips[p]; ip != "" {
				ns.Peers = append(ns.Peers, ip)
			}
		}
		return sn.Shape(ctx, ns)
	})
	if err == nil && len(shaped) == 0 && len(names) > 0 {
		err = errNothingCut
	}
	unshape = func(ctx context.Context) error {
		_, err := onNodes(ctx, e, names, func(t Target) error {
			sn, ok := t.Node.(ShapeNode)
			if !ok {
				return nil
			}
			_, err := sn.Unshape(ctx)
			return err
		})
		return err
	}
	return shaped, unshape, err
}

// Reset removes whatever shaping the node has, from this kind or another
// (the three kinds share the backend's one shaping).
func (s *shaper) Reset(ctx context.Context, _ *Env, t Target) (bool, error) {
	sn, ok := t.Node.(ShapeNode)
	if !ok {
		return false, nil
	}
	return sn.Unshape(ctx)
}

// ParseNetBounds reads the flags' spelling of the bounds, each "" for its
// default: delay "MIN..MAX" (Go durations, "200ms..2s"), jitter a
// duration, rate "MIN..MAX" in kbit/s ("64..1024"); then validates them.
// Flags are b as --net-delay, --net-jitter and --net-rate spell it, which
// ParseNetBounds reads back.
func (b NetBounds) Flags() (delay, jitter, rate string) {
	return fmt.Sprintf("%s..%s", b.DelayMin, b.DelayMax), b.Jitter.String(), fmt.Sprintf("%d..%d", b.RateMin, b.RateMax)
}

func ParseNetBounds(delay, jitter, rate string) (NetBounds, error) {
	b := DefaultNetBounds
	if delay != "" {
		lo, hi, ok := strings.Cut(delay, "..")
		dlo, err1 := time.ParseDuration(lo)
		dhi, err2 := time.ParseDuration(hi)
		if !ok || err1 != nil || err2 != nil {
			return b, fmt.Errorf("nemesis: net delay %q: want MIN..MAX, Go durations (200ms..2s)", delay)
		}
		b.DelayMin, b.DelayMax = dlo, dhi
		if b.Jitter > dlo && jitter == "" {
			b.Jitter = dlo // the default jitter never exceeds a smaller delay asked for
		}
	}
	if jitter != "" {
		j, err := time.ParseDuration(jitter)
		if err != nil {
			return b, fmt.Errorf("nemesis: net jitter %q: want a Go duration (50ms)", jitter)
		}
		b.Jitter = j
	}
	if rate != "" {
		lo, hi, ok := strings.Cut(rate, "..")
		rlo, err1 := strconv.Atoi(lo)
		rhi, err2 := strconv.Atoi(hi)
		if !ok || err1 != nil || err2 != nil {
			return b, fmt.Errorf("nemesis: net rate %q: want MIN..MAX in kbit/s (64..1024)", rate)
		}
		b.RateMin, b.RateMax = rlo, rhi
	}
	return b, b.Validate()
}
