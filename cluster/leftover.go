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
// any process's memory, and Reset undoes them, as Jepsen's nemesis setup does
// before every test. Every iptables rule in a node's container is
// lockcheck's (the image adds none), so Reset removes them all.

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

// Reset brings the node to its known state: container running and not
// paused, JVM continued, no iptables rules, clock offset zero. It returns
// what it found and undid (as Faults says it), in that order.
func (n *Node) Reset(ctx context.Context) ([]string, error) {
	found, err := n.Faults(ctx)
	if err != nil || len(found) == 0 {
		return nil, err
	}
	var healed []string
	if found[0] == "container paused" {
		if err := n.Unpause(ctx); err != nil {
			return healed, err
		}
		healed = append(healed, found[0])
		// What the pause hid (a stopped JVM, rules, a clock) shows only now.
		if found, err = n.Faults(ctx); err != nil {
			return healed, err
		}
	}
	for _, f := range found {
		switch {
		case strings.HasPrefix(f, "container "):
			// A stopped node comes back with its offset file: reset that
			// after, below, by reading the state again.
			if err := n.Restart(ctx); err != nil {
				return healed, err
			}
			healed = append(healed, f)
			more, err := n.Reset(ctx)
			return append(healed, more...), err
		case f == "jvm stopped":
			if err := n.SignalJVM(ctx, "CONT"); err != nil {
				return healed, err
			}
		case strings.HasSuffix(f, " iptables rules"):
			if _, err := n.Exec(ctx, "sh", "-c", flushAllRules); err != nil {
				return healed, err
			}
		case strings.HasPrefix(f, "clock offset"):
			if err := n.SetClockOffset(ctx, 0); err != nil {
				return healed, err
			}
		default:
			return healed, fmt.Errorf("reset %s: cannot undo %q", n.Name, f)
		}
		healed = append(healed, f)
	}
	return healed, nil
}

// flushAllRules empties every chain of the filter table and deletes the
// chains lockcheck created, and sets the policies back to ACCEPT.
const flushAllRules = "iptables -w -F && iptables -w -X && " +
	"iptables -w -P INPUT ACCEPT && iptables -w -P OUTPUT ACCEPT && iptables -w -P FORWARD ACCEPT"

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
