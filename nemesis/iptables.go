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
)

// chain is an iptables chain of lockcheck's own on a node. The convention
// for every rule lockcheck adds (partition, loss, and hosts reached over SSH
// where other rules exist): each kind owns one chain, LOCKCHECK-<KIND>,
// created on demand and jumped to from INPUT; its heal and reset flush that
// chain, remove the jump and delete the chain, and never touch any other
// rule. A reset therefore finds exactly what an earlier process left.
type chain string

func chainOf(kind string) chain { return chain("LOCKCHECK-" + strings.ToUpper(kind)) }

func (c chain) String() string { return string(c) }

// exists says whether the chain is on the node; it asks with `iptables -S`
// so that a node it cannot reach is an error, not "no chain".
func (c chain) exists(ctx context.Context, n Node) (bool, error) {
	out, err := netExec(ctx, n, "iptables", "-w", "-S")
	if err != nil {
		return false, fmt.Errorf("list iptables rules: %w", err)
	}
	return slices.Contains(strings.Split(out, "\n"), "-N "+string(c)), nil
}

// add appends rule to the chain, creating the chain and its jump first.
func (c chain) add(ctx context.Context, n Node, rule ...string) error {
	ok, err := c.exists(ctx, n)
	if err != nil {
		return err
	}
	if !ok {
		if _, err := netExec(ctx, n, "iptables", "-w", "-N", string(c)); err != nil {
			return fmt.Errorf("create chain %s: %w", c, err)
		}
		// The harness's own control connection (SSH) passes first: a
		// partition must never cut it off from the heal.
		if cp, ok := n.(ControlPorter); ok && cp.ControlPort() > 0 {
			if _, err := netExec(ctx, n, "iptables", "-w", "-A", string(c), "-p", "tcp", "--dport", strconv.Itoa(cp.ControlPort()), "-j", "RETURN"); err != nil {
				return fmt.Errorf("exempt the control port in %s: %w", c, err)
			}
		}
		if _, err := netExec(ctx, n, "iptables", "-w", "-I", "INPUT", "-j", string(c)); err != nil {
			return fmt.Errorf("jump to chain %s: %w", c, err)
		}
	}
	args := append([]string{"iptables", "-w", "-A", string(c)}, rule...)
	if _, err := netExec(ctx, n, args...); err != nil {
		return fmt.Errorf("add rule to %s: %w", c, err)
	}
	return nil
}

// NetExecer is a Node that can change its network rules while it is
// frozen: Docker refuses an exec into a paused container, and a pause
// overlapping a cut on one node would otherwise fail the cut, or its heal.
type NetExecer interface {
	NetExec(ctx context.Context, cmd ...string) (string, error)
}

// netExec runs an iptables command on n, through NetExec where n has it.
func netExec(ctx context.Context, n Node, cmd ...string) (string, error) {
	if ne, ok := n.(NetExecer); ok {
		return ne.NetExec(ctx, cmd...)
	}
	return n.Exec(ctx, cmd...)
}

// ControlPorter is a Node the harness drives over the network (SSH): every
// chain lets its control port's TCP through before any other rule.
type ControlPorter interface {
	ControlPort() int
}

// remove flushes the chain, removes its jump from INPUT and deletes it; it
// says whether the chain was there.
func (c chain) remove(ctx context.Context, n Node) (bool, error) {
	ok, err := c.exists(ctx, n)
	if err != nil || !ok {
		return false, err
	}
	if _, err := netExec(ctx, n, "iptables", "-w", "-F", string(c)); err != nil {
		return true, fmt.Errorf("flush chain %s: %w", c, err)
	}
	// Every jump goes, should an interrupted add have left two.
	for range 8 {
		if _, err := netExec(ctx, n, "iptables", "-w", "-D", "INPUT", "-j", string(c)); err != nil {
			break
		}
	}
	if _, err := netExec(ctx, n, "iptables", "-w", "-X", string(c)); err != nil {
		return true, fmt.Errorf("delete chain %s: %w", c, err)
	}
	return true, nil
}

// resetChain is the Reset of a kind whose whole effect is its chain. A
// node that is not running has no rules (a container starts with fresh
// ones) but cannot be asked: the caller tries again after the kill reset
// restarted it.
func resetChain(ctx context.Context, c chain, t Target) (bool, error) {
	return c.remove(ctx, t.Node)
}

// Grudge maps a node's name to the names of the nodes it drops packets from.
// The gateway (the harness's clients) is named "clients". It is recorded
// as it is in the partition and loss lines.
type Grudge = history.Grudge

// GatewayName stands for the harness's clients in a Grudge.
const GatewayName = "clients"

// applyGrudge adds, on every node with a grudge, one rule to the kind's
// chain that drops packets from the sources named (then the rule's tail,
// e.g. a statistic match), on every node at once. It returns the nodes it
// changed and the grudge as applied: a node onNodes passes over (its
// container stopped) took no rule, so the record does not say it did.
func applyGrudge(ctx context.Context, e *Env, c chain, g Grudge, tail ...string) ([]string, Grudge, error) {
	ips := map[string]string{GatewayName: e.Gateway}
	for _, t := range e.Targets {
		ips[t.Name] = t.IP
	}
	var names []string
	for _, t := range e.Targets {
		if len(g[t.Name]) > 0 {
			names = append(names, t.Name)
		}
	}
	cut, err := onNodes(ctx, e, names, func(t Target) error {
		srcs := make([]string, len(g[t.Name]))
		for i, f := range g[t.Name] {
			srcs[i] = ips[f]
		}
		rule := append([]string{"-s", strings.Join(srcs, ",")}, tail...)
		return c.add(ctx, t.Node, append(rule, "-j", "DROP")...)
	})
	if err == nil && len(cut) == 0 && len(names) > 0 {
		err = errNothingCut
	}
	applied := Grudge{}
	for _, n := range cut {
		applied[n] = g[n]
	}
	return cut, applied, err
}

// removeChain removes the chain from every node at once (a stop, or a
// start that failed halfway); a stopped node has none to remove.
func removeChain(ctx context.Context, e *Env, c chain) error {
	names := make([]string, len(e.Targets))
	for i, t := range e.Targets {
		names[i] = t.Name
	}
	_, err := onNodes(ctx, e, names, func(t Target) error {
		_, err := c.remove(ctx, t.Node)
		return err
	})
	return err
}

// onNodes runs f on the named nodes at once and returns, in target order,
// those it ran on. A node where f fails and whose container is then found
// stopped is passed over: one killed, or out of the ring after a leave, has
// no rules to take a cut nor to remove (they went with its container), and
// Cassandra's messages do not reach it; a leaver's container stopping as
// its decommission ends fails the exec ("exited 126") a moment before
// Docker reports it stopped. f runs first everywhere: a host over SSH whose
// JVM is down says "exited" but keeps its kernel's rules, and takes them.
func onNodes(ctx context.Context, e *Env, names []string, f func(Target) error) ([]string, error) {
	var ts []Target
	for _, t := range e.Targets {
		if slices.Contains(names, t.Name) {
			ts = append(ts, t)
		}
	}
	errs := parallel(ts, func(t Target) error {
		if err := f(t); err != nil {
			if stoppedMeanwhile(ctx, t) {
				e.Log.Info("nemesis: node stopped while its rules changed: passed over", "node", t.Name, "err", err)
				return errPassedOver
			}
			return fmt.Errorf("%s: %w", t.Name, err)
		}
		return nil
	})
	var ran []string
	var failed []error
	for i, t := range ts {
		switch {
		case errs[i] == nil:
			ran = append(ran, t.Name)
		case !errors.Is(errs[i], errPassedOver):
			failed = append(failed, errs[i])
		}
	}
	return ran, errors.Join(failed...)
}

var (
	errPassedOver = errors.New("container stopped")
	// errNothingCut fails a cut all of whose nodes were passed over: its
	// record would say nothing, and a replay would draw another.
	errNothingCut = errors.New("every node it would cut is stopped")
)

// exitWait bounds how long a failed exec waits for Docker to report its
// container stopped (or not yet started again); a paused one is not
// stopping and fails at once.
const exitWait = 5 * time.Second

func stoppedMeanwhile(ctx context.Context, t Target) bool {
	deadline := time.Now().Add(exitWait)
	for {
		st, err := t.Node.State(ctx)
		switch {
		case err != nil || st == "paused":
			return false
		case st != "running":
			return true
		case time.Now().After(deadline) || !sleep(ctx, exitWait/20):
			return false
		}
	}
}
