package cluster

import (
	"context"
	"fmt"
	"regexp"
	"slices"
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

// storageServiceBean holds paxos_state_purging on a running node (its
// attribute PaxosStatePurging: StorageServiceMBean's get/setPaxosStatePurging
// in 4.1 and later).
const storageServiceBean = "org.apache.cassandra.db:type=StorageService"

// paxosLine is the paxos_variant line of a node's cassandra.yaml.
var paxosLine = regexp.MustCompile(`(?m)^paxos_variant:[ \t]*(\S+)[ \t]*$`)

// purgingLine is the paxos_state_purging line of a node's cassandra.yaml
// (absent: the release's default, legacy).
var purgingLine = regexp.MustCompile(`(?m)^paxos_state_purging:[ \t]*(\S+)[ \t]*$`)

// defaultPurging is paxos_state_purging when cassandra.yaml names none
// (DatabaseDescriptor sets legacy).
const defaultPurging = "legacy"

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
	edit := []string{"sed", "-i", "-E", fmt.Sprintf(`s/^paxos_variant:[ \t]*\S+[ \t]*$/paxos_variant: %s/`, variant), confDir + "/cassandra.yaml"}
	return n.switchSetting(ctx, "paxos variant", storageProxyBean, "PaxosVariant", variant, restart, edit, n.PaxosVariant)
}

// switchSetting applies one cassandra.yaml setting that a node can also
// change live through an MBean attribute: edit rewrites the file (the
// node's next start reads it), then a rolling restart or the attribute
// set live applies it, and read must find the node running it and the
// file saying it.
func (n *Node) switchSetting(ctx context.Context, what, bean, attr, value string, restart bool, edit []string,
	read func(context.Context) (live, file string, err error)) error {
	if _, err := n.Exec(ctx, edit...); err != nil {
		return fmt.Errorf("%s of %s: cassandra.yaml: %w", what, n.Name, err)
	}
	if restart {
		if err := n.rollingRestart(ctx); err != nil {
			return fmt.Errorf("%s of %s: %w", what, n.Name, err)
		}
	} else if _, err := n.Nodetool(ctx, "sjk", "mx", "-b", bean, "-f", attr, "-ms", "-v", value); err != nil {
		return fmt.Errorf("%s of %s: set: %w", what, n.Name, err)
	}
	live, file, err := read(ctx)
	if err != nil {
		return err
	}
	if live != value || file != value {
		return fmt.Errorf("%s of %s: runs %s, cassandra.yaml says %s; want %s", what, n.Name, live, file, value)
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

// rollingRestart restarts the node as an operator's rolling restart does:
// nodetool drain (memtables flushed, no new writes taken), a clean stop,
// and a start that reads cassandra.yaml again; it returns when the node
// serves CQL.
func (n *Node) rollingRestart(ctx context.Context) error {
	if _, err := n.Nodetool(ctx, "drain"); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	if _, err := n.c.d.ContainerStop(ctx, n.ContainerID, client.ContainerStopOptions{}); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	return n.Restart(ctx)
}

// The second step of the documented upgrade path (docs/notes-on-cassandra.md):
// once every node runs Paxos v2 and Paxos repairs run, paxos_state_purging
// goes from legacy to repaired (4.1's Config.java: "Migration to repaired is
// recommended, but requires that regular paxos repairs are performed";
// "Should only be modified once paxos_variant = v2"), in cassandra.yaml and
// on the running node (StorageServiceMBean.setPaxosStatePurging) or by a
// rolling restart.

// PaxosStatePurging is the paxos_state_purging the node runs now (its
// StorageService MBean) and the one its cassandra.yaml names (legacy when
// it names none).
func (n *Node) PaxosStatePurging(ctx context.Context) (live, file string, err error) {
	out, err := n.Nodetool(ctx, "sjk", "mx", "-b", storageServiceBean, "-f", "PaxosStatePurging", "-mg")
	if err != nil {
		return "", "", fmt.Errorf("paxos state purging of %s: %w", n.Name, err)
	}
	live = lastLine(out)
	if !slices.Contains(PaxosStatePurgings, live) {
		return "", "", fmt.Errorf("paxos state purging of %s: MBean says %q", n.Name, live)
	}
	y, err := n.Exec(ctx, "cat", confDir+"/cassandra.yaml")
	if err != nil {
		return "", "", fmt.Errorf("paxos state purging of %s: %w", n.Name, err)
	}
	return live, yamlPurging(y), nil
}

// yamlPurging is the paxos_state_purging a cassandra.yaml names.
func yamlPurging(y string) string {
	if m := purgingLine.FindStringSubmatch(y); m != nil {
		return m[1]
	}
	return defaultPurging
}

// purgingScript sets paxos_state_purging to mode in the cassandra.yaml at
// path: the line rewritten where the file has one, else added at its end
// (the template writes none for the release's default).
func purgingScript(path, mode string) string {
	return fmt.Sprintf(`f=%s; if grep -Eq '^paxos_state_purging:' "$f"; then sed -i -E 's/^paxos_state_purging:[ \t]*\S+[ \t]*$/paxos_state_purging: %s/' "$f"; else printf '\npaxos_state_purging: %s\n' >> "$f"; fi`,
		path, mode, mode)
}

// StartedPurging is the paxos_state_purging the cluster was started with
// (WithPaxosStatePurging; legacy when none was given).
func (n *Node) StartedPurging() string {
	if n.c.cfg.purging == "" {
		return defaultPurging
	}
	return n.c.cfg.purging
}

// SetPaxosStatePurging switches the node to mode: its cassandra.yaml first
// (the line rewritten, or added where the file names none), then the
// running node, live through the StorageService MBean or, with restart, by
// a rolling restart. It returns when the node runs mode and, after a
// restart, serves CQL.
func (n *Node) SetPaxosStatePurging(ctx context.Context, mode string, restart bool) error {
	if !slices.Contains(PaxosStatePurgings, mode) || n.c.cfg.release().LegacyYAML {
		return fmt.Errorf("paxos state purging of %s: Cassandra %s has no %q", n.Name, n.c.cfg.release().Name, mode)
	}
	edit := []string{"sh", "-c", purgingScript(confDir+"/cassandra.yaml", mode)}
	return n.switchSetting(ctx, "paxos state purging", storageServiceBean, "PaxosStatePurging", mode, restart, edit, n.PaxosStatePurging)
}
