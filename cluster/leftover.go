package cluster

import (
	"context"
	"fmt"
	"strings"

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
	case container.StatePaused:
		// docker exec is refused in a paused container: nothing more can be read.
		return []string{"container paused"}, nil
	case container.StateRunning:
	default:
		return []string{"container " + string(st)}, nil
	}
	var out []string
	if stopped, err := n.jvmStopped(ctx); err != nil {
		return nil, err
	} else if stopped {
		out = append(out, "jvm stopped")
	}
	rules, err := n.iptablesRules(ctx)
	if err != nil {
		return nil, err
	}
	if len(rules) > 0 {
		out = append(out, fmt.Sprintf("%d iptables rules", len(rules)))
	}
	off, err := n.Exec(ctx, "cat", faketimeFile)
	if err != nil {
		return nil, err
	}
	if off = strings.TrimSpace(off); off != strings.TrimSpace(clockOffsetLine(0)) {
		out = append(out, "clock offset "+off)
	}
	return out, nil
}

// iptablesRules lists the node's filter rules (-A lines) and chains it did
// not start with (-N lines).
func (n *Node) iptablesRules(ctx context.Context) ([]string, error) {
	out, err := n.Exec(ctx, "iptables", "-w", "-S")
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
