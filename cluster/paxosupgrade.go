package cluster

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/moby/moby/client"
)

// Paxos v1 to v2 on a running cluster (the paxos-upgrade fault kind). A
// node's variant lives in two places: its cassandra.yaml (what it starts
// with) and its StorageProxy MBean (what it runs now: the attribute
// PaxosVariant, whose setter 4.1 and later have; Cassandra's own simulator
// switches a running node's variant through the same Paxos.setPaxosVariant).
// nodetool has no command for it in 4.1 or 5.0, so the node's nodetool
// reaches the MBean through its sjk command (Swiss Java Knife, shipped with
// Cassandra's jars).

const storageProxyBean = "org.apache.cassandra.db:type=StorageProxy"

// paxosLine is the paxos_variant line of a node's cassandra.yaml.
var paxosLine = regexp.MustCompile(`(?m)^paxos_variant:[ \t]*(\S+)[ \t]*$`)

// PaxosVariant is the variant the node runs now (its StorageProxy MBean)
// and the one its cassandra.yaml names (what it starts with).
func (n *Node) PaxosVariant(ctx context.Context) (live, file string, err error) {
	out, err := n.Nodetool(ctx, "sjk", "mx", "-b", storageProxyBean, "-f", "PaxosVariant", "-mg")
	if err != nil {
		return "", "", fmt.Errorf("paxos variant of %s: %w", n.Name, err)
	}
	live = lastLine(out)
	if !knownPaxos(live) {
		return "", "", fmt.Errorf("paxos variant of %s: MBean says %q", n.Name, live)
	}
	y, err := n.Exec(ctx, "cat", confDir+"/cassandra.yaml")
	if err != nil {
		return "", "", fmt.Errorf("paxos variant of %s: %w", n.Name, err)
	}
	m := paxosLine.FindStringSubmatch(y)
	if m == nil {
		return "", "", fmt.Errorf("paxos variant of %s: no paxos_variant line in its cassandra.yaml", n.Name)
	}
	return live, m[1], nil
}

// StartedPaxos is the variant the cluster was started with (WithPaxos):
// what every node runs before a paxos-upgrade window and after the heal
// of a run that followed one.
func (n *Node) StartedPaxos() string { return n.c.cfg.paxos }

// SetPaxosVariant switches the node to variant: its cassandra.yaml first
// (so that a restart keeps it), then the running node, either live through
// the MBean or, with restart, as an operator's rolling restart does
// (nodetool drain, a clean stop, a start that reads the file). It returns
// when the node runs the variant and, after a restart, serves CQL.
func (n *Node) SetPaxosVariant(ctx context.Context, variant string, restart bool) error {
	if !n.c.cfg.release().takesPaxos(variant) {
		return fmt.Errorf("paxos variant of %s: Cassandra %s has no %q", n.Name, n.c.cfg.release().Name, variant)
	}
	// sed rewrites the one line in place; the file stays where the node
	// reads it at its next start.
	if _, err := n.Exec(ctx, "sed", "-i", "-E", fmt.Sprintf(`s/^paxos_variant:[ \t]*\S+[ \t]*$/paxos_variant: %s/`, variant), confDir+"/cassandra.yaml"); err != nil {
		return fmt.Errorf("paxos variant of %s: cassandra.yaml: %w", n.Name, err)
	}
	if restart {
		if _, err := n.Nodetool(ctx, "drain"); err != nil {
			return fmt.Errorf("paxos variant of %s: drain: %w", n.Name, err)
		}
		if _, err := n.c.d.ContainerStop(ctx, n.ContainerID, client.ContainerStopOptions{}); err != nil {
			return fmt.Errorf("paxos variant of %s: stop: %w", n.Name, err)
		}
		if err := n.Restart(ctx); err != nil {
			return fmt.Errorf("paxos variant of %s: %w", n.Name, err)
		}
	} else if _, err := n.Nodetool(ctx, "sjk", "mx", "-b", storageProxyBean, "-f", "PaxosVariant", "-ms", "-v", variant); err != nil {
		return fmt.Errorf("paxos variant of %s: set: %w", n.Name, err)
	}
	live, file, err := n.PaxosVariant(ctx)
	if err != nil {
		return err
	}
	if live != variant || file != variant {
		return fmt.Errorf("paxos variant of %s: runs %s, cassandra.yaml says %s; want %s", n.Name, live, file, variant)
	}
	return nil
}

// RepairPaxos runs a Paxos repair of the cluster's keyspace from the node
// (nodetool repair --paxos-only): every Paxos operation begun before it,
// on the ranges the node replicates, is committed or invalidated on a
// quorum.
func (n *Node) RepairPaxos(ctx context.Context) error {
	out, err := n.Nodetool(ctx, "repair", "--paxos-only", n.c.keyspace)
	if err != nil {
		return fmt.Errorf("paxos repair from %s: %w", n.Name, err)
	}
	if strings.Contains(out, "Repair command") && strings.Contains(out, "failed") {
		return fmt.Errorf("paxos repair from %s: %s", n.Name, lastLine(out))
	}
	return nil
}
