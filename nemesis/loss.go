package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Loss drops a random share of packets (iptables' statistic match; tc netem
// is missing from this kernel) between chosen nodes, or between the
// harness's clients and chosen nodes: messages are late and retried rather
// than cut, which makes timeouts of unknown outcome instead of clean
// failures.
//
// It stays an iptables kind rather than a shaping (shape.go, whose Shaping
// has no loss): its lines record per node the sources whose packets it
// drops on arrival (ingress), which old histories replay as such, while a
// shaping acts on what a node sends (egress); and a drop needs only
// iptables, which every backend has, where a shaped loss would need netem
// or the shaper binary and would leave `all`.
//
// It is in `all`: at the default interval a loss window costs what a
// partition does, and the matrix's node-fault rows list their kinds
// explicitly, so their timing is unchanged.
const Loss = "loss"

var lossKind = Kind{
	Name: Loss, Scope: ScopeNode, Color: "#e15759",
	Doc: "Drops a random share of packets (iptables' statistic match) between chosen nodes and the others, or between " +
		"the harness's clients and chosen nodes: messages are late and retried rather than cut.",
	Needs:      []Capability{CapIPTables},
	StartValue: LossStart{Mode: "nodes", Probability: 0.15, Drops: Grudge{"n1": {"n2", "n3"}}},
	StopValue:  LossStop{Mode: "nodes"},
	New:        func() Injector { return &loss{} },
}

// LossStart is the value of a start-loss line.
type LossStart struct {
	Mode        string  `json:"mode" doc:"nodes (chosen nodes lose packets from the others) or clients (from the harness)"`
	Probability float64 `json:"probability" doc:"the share of packets dropped (0.05..0.5 by default)"`
	Drops       Grudge  `json:"drops" doc:"per node, the sources whose packets it drops at random"`
}

// LossStop is the value of a stop-loss line.
type LossStop struct {
	Mode string `json:"mode" doc:"as at the start"`
}

type loss struct{}

// lossDraw is one loss fault: the drop probability and who drops packets
// from whom (its start line's value).
type lossDraw = LossStart

// draw takes every random choice of one loss fault from e.Sched: a non-empty
// set of nodes that lose packets from the other nodes ("nodes"), or from the
// clients ("clients").
func (*loss) draw(e *Env) (lossDraw, error) {
	p := e.LossMin + e.Sched.Float64()*(e.LossMax-e.LossMin)
	p = math.Round(p*100) / 100
	mode, drops, err := drawLinks(e, Loss)
	if err != nil {
		return lossDraw{}, err
	}
	return lossDraw{Mode: mode, Probability: p, Drops: drops}, nil
}

// drawLinks draws the links a fault between nodes acts on, every choice
// from e.Sched: a non-empty set of nodes and, by mode, each one's links to
// the nodes not chosen ("nodes"; someone is always left) or to the clients
// ("clients"). loss drops packets on them, the shaping kinds slow them.
func drawLinks(e *Env, kind string) (mode string, links Grudge, err error) {
	var modes []string
	if len(e.Targets) > 1 {
		modes = append(modes, "nodes")
	}
	if e.Gateway != "" {
		modes = append(modes, "clients")
	}
	if len(modes) == 0 {
		return "", nil, fmt.Errorf("nemesis: %s needs two nodes or a gateway", kind)
	}
	mode = modes[e.Sched.IntN(len(modes))]
	perm := e.Sched.Perm(len(e.Targets))
	k := 1 + e.Sched.IntN(len(e.Targets))
	if mode == "nodes" {
		k = min(k, len(e.Targets)-1)
	}
	links = Grudge{}
	chosen := perm[:k]
	for _, i := range chosen {
		me := e.Targets[i].Name
		if mode == "clients" {
			links[me] = []string{GatewayName}
			continue
		}
		for j, t := range e.Targets {
			if !slices.Contains(chosen, j) {
				links[me] = append(links[me], t.Name)
			}
		}
		slices.Sort(links[me])
	}
	return mode, links, nil
}

func (l *loss) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	d, err := l.draw(e)
	if err != nil {
		return nil, err
	}
	if v, ok := given[LossStart](e); ok && len(v.Drops) > 0 && v.Probability > 0 {
		d = v
	}
	c := chainOf(Loss)
	nodes, applied, err := applyGrudge(ctx, e, c, d.Drops,
		"-m", "statistic", "--mode", "random", "--probability", strconv.FormatFloat(d.Probability, 'f', 2, 64))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("nemesis: loss: %w", err), removeChain(context.WithoutCancel(ctx), e, c))
	}
	d.Drops = applied
	if err := e.Record(history.StartF(Loss), d, nodes); err != nil {
		return nil, errors.Join(err, removeChain(context.WithoutCancel(ctx), e, c))
	}
	return func(ctx context.Context) error {
		err := removeChain(ctx, e, c)
		if err != nil {
			err = fmt.Errorf("nemesis: heal loss: %w", err)
		}
		return errors.Join(err, e.Record(history.StopF(Loss), LossStop{Mode: d.Mode}, nodes))
	}, nil
}

func (*loss) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	return resetChain(ctx, chainOf(Loss), t)
}
