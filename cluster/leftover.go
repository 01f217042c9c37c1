package cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockcheck/lockcheck/netshape"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// A harness killed mid-run (SIGKILL, an OOM kill, a CI time-out) leaves its
// faults in place: a frozen container, a SIGSTOPped JVM, iptables rules, a
// skewed clock, a killed node. Faults reads them off the node itself, not off
// any process's memory, for `lockcheck cluster status` and for the report of
// the heal (nemesis.HealLeftovers, where each fault kind undoes its own).

// Faults says what keeps the node from its known state, one phrase each
// ("container paused", "jvm stopped", "3 iptables rules", "clock offset
// +5.000000", "container exited"); none when the node is clean.
func (n *Node) Faults(ctx context.Context) ([]string, error) {
	ins, err := n.c.d.ContainerInspect(ctx, n.ContainerID, client.ContainerInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", n.Name, err)
	}
	switch st := ins.Container.State.Status; st {
	case container.StatePaused, container.StateRunning:
	default:
		return []string{"container " + string(st)}, nil
	}
	var out []string
	if ins.Container.State.Paused {
		// docker exec is refused in a paused container: its rules (its
		// network namespace) and clock file can be read, a stopped JVM
		// cannot be told from the freeze.
		out = append(out, "container paused")
	} else if stopped, err := n.jvmStopped(ctx); err != nil {
		return nil, err
	} else if stopped {
		out = append(out, "jvm stopped")
	}
	// The slowness faults' leftovers (slowness.go): a CPU quota, a disk
	// latency.
	if hc := ins.Container.HostConfig; hc != nil && hc.CPUQuota > 0 {
		share, _ := n.CPUQuota(ctx)
		out = append(out, fmt.Sprintf("cpu quota %.3g of a core", share))
	}
	if n.c.LazyFS() && !ins.Container.State.Paused {
		if d, err := n.DiskLatency(ctx); err == nil && d > 0 {
			out = append(out, "disk latency "+d.String())
		}
	}
	rules, err := n.iptablesRules(ctx)
	if err != nil {
		return nil, err
	}
	if len(rules) > 0 {
		out = append(out, fmt.Sprintf("%d iptables rules", len(rules)))
	}
	// A shaping a killed run left: lockcheck's qdisc, a live shaper.
	if st, err := n.NetExec(ctx, "sh", "-c", netshape.StateScript); err == nil {
		out = append(out, netshape.State(st)...)
	}
	off, err := n.clockLine(ctx)
	if err != nil && ins.Container.State.Paused {
		// Read another way than exec, which may fail where an exec would
		// not: what the paused node showed so far still stands.
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	if off = strings.TrimSpace(off); off != strings.TrimSpace(clockOffsetLine(0)) {
		out = append(out, "clock offset "+off)
	}
	// A maintenance window's setting (autocompaction off, a
	// gc_grace_seconds): the heal undoes it.
	if !ins.Container.State.Paused {
		if changes, err := n.MaintenanceChanges(ctx); err == nil {
			out = append(out, changes...)
		}
	}
	// A paxos-upgrade window's switches (one-way within its run): the
	// next run's heal puts the cluster's variant and purging back.
	if n.c.cfg.paxosUpgrade && !ins.Container.State.Paused {
		if f := n.paxosFault(ctx); f != "" {
			out = append(out, f)
		}
		if f := n.purgingFault(ctx); f != "" {
			out = append(out, f)
		}
	}
	return out, nil
}

// paxosFault says how the node's Paxos variant differs from the one the
// cluster was started with ("" when it does not, or cannot be read: a
// node that is still starting).
func (n *Node) paxosFault(ctx context.Context) string {
	live, file, err := n.PaxosVariant(ctx)
	if err != nil || (live == n.c.cfg.paxos && file == n.c.cfg.paxos) {
		return ""
	}
	return fmt.Sprintf("paxos %s (cassandra.yaml %s; started on %s)", live, file, n.c.cfg.paxos)
}

// purgingFault says how the node's paxos_state_purging differs from the
// one the cluster was started with ("" when it does not, or cannot be
// read).
func (n *Node) purgingFault(ctx context.Context) string {
	live, file, err := n.PaxosStatePurging(ctx)
	want := n.StartedPurging()
	if err != nil || (live == want && file == want) {
		return ""
	}
	return fmt.Sprintf("paxos_state_purging %s (cassandra.yaml %s; started on %s)", live, file, want)
}

// iptablesRules lists the node's filter rules (-A lines) and chains it did
// not start with (-N lines).
func (n *Node) iptablesRules(ctx context.Context) ([]string, error) {
	out, err := n.NetExec(ctx, "iptables", "-w", "-S")
	if err != nil {
		return nil, err
	}
	var rules []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "-A ") || strings.HasPrefix(l, "-N ") {
			rules = append(rules, l)
		}
	}
	return rules, nil
}

// jvmStopped reports whether the Cassandra JVM is stopped (state T in
// /proc/<pid>/stat). No JVM at all is not "stopped": the container exits
// with it.
func (n *Node) jvmStopped(ctx context.Context) (bool, error) {
	out, err := n.Exec(ctx, "sh", "-c", "cat /proc/\"$(cat "+pidFile+")\"/stat 2>/dev/null || true")
	if err != nil {
		return false, err
	}
	// pid (comm) state ...: comm may hold spaces, the state follows the last ')'.
	i := strings.LastIndexByte(out, ')')
	if i < 0 || i+2 >= len(out) {
		return false, nil
	}
	return out[i+2] == 'T' || out[i+2] == 't', nil
}

// lockcheckChain is the prefix of every iptables chain lockcheck's faults
// make (nemesis/iptables.go): rules in them, and INPUT's jumps to them,
// are test-made and the heal removes them.
const lockcheckChain = "LOCKCHECK-"

// Foreign lists what keeps the node from its known state that lockcheck did
// not make, so that its heal leaves it: filter rules outside lockcheck's
// chains (each as `iptables -S` prints it) and a policy that is not ACCEPT.
// A container that is not running says so: the heal restarts it, and a
// node that does not come back fails the run's health check with its cause.
func (n *Node) Foreign(ctx context.Context) ([]string, error) {
	st, err := n.State(ctx)
	if err != nil {
		return nil, err
	}
	switch container.ContainerState(st) {
	case container.StateRunning, container.StatePaused:
	case container.StateDead, container.StateRemoving:
		// Docker itself gave up on it: no heal starts it again.
		return []string{"container " + st + " (Docker cannot start it again: `lockcheck cluster down`, then up)"}, nil
	default:
		return nil, nil // no exec; the heal starts it, or its health check says why not
	}
	out, err := n.NetExec(ctx, "iptables", "-w", "-S")
	if err != nil {
		return nil, err
	}
	return foreignRules(out), nil
}

// foreignRules picks the lines of `iptables -S` lockcheck did not add.
func foreignRules(out string) []string {
	var rules []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		f := strings.Fields(l)
		switch {
		case len(f) < 2:
		case f[0] == "-P":
			if len(f) == 3 && f[2] != "ACCEPT" {
				rules = append(rules, "iptables policy "+l)
			}
		case f[0] == "-N":
			if !strings.HasPrefix(f[1], lockcheckChain) {
				rules = append(rules, "iptables chain "+l)
			}
		case f[0] == "-A":
			if strings.HasPrefix(f[1], lockcheckChain) {
				continue
			}
			if len(f) == 4 && f[2] == "-j" && strings.HasPrefix(f[3], lockcheckChain) {
				continue
			}
			rules = append(rules, "iptables rule "+l)
		}
	}
	return rules
}

// RemoveForeign flushes the node's whole filter table (every chain,
// lockcheck's or not, and ACCEPT policies): `lockcheck cluster heal
// --force` on a cluster lockcheck made, where no rule is anyone's firewall.
func (n *Node) RemoveForeign(ctx context.Context) error {
	_, err := n.NetExec(ctx, "sh", "-c", "iptables -w -P INPUT ACCEPT && iptables -w -P OUTPUT ACCEPT && iptables -w -P FORWARD ACCEPT && iptables -w -F && iptables -w -X")
	if err != nil {
		return fmt.Errorf("%s: flush iptables: %w", n.Name, err)
	}
	return nil
}
