package cluster

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// An operator's routine work on a node, the maintenance fault kind's node
// actions (faultcap.Maintenance): nodetool flush, compact (a table, or
// chosen SSTables), repair --paxos-only, autocompaction off and on, and a
// table's gc_grace_seconds through CQL. A table is keyspace.table, or a
// table of the cluster's keyspace ("": every table of it).

// maintenanceFile keeps, on the node's disk, the changes of maintenance
// windows that outlive them (autocompaction off, a gc_grace_seconds set),
// one a line, written before the change: a harness killed in between
// leaves the line, and the next run's heal undoes what it names.
const maintenanceFile = dataDir + "/lockcheck-maintenance"

// defaultGCGrace is Cassandra's default gc_grace_seconds, which
// UndoMaintenance puts back.
const defaultGCGrace = 864000

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,47}$`)

// table splits a table as the maintenance steps name it into keyspace and
// table ("" table: the whole keyspace).
func (n *Node) table(name string) (ks, tb string, err error) {
	ks, tb = n.c.keyspace, name
	if k, t, ok := strings.Cut(name, "."); ok {
		ks, tb = k, t
	}
	if !identRE.MatchString(ks) || tb != "" && !identRE.MatchString(tb) {
		return "", "", fmt.Errorf("table %q: want keyspace.table or a table of keyspace %s", name, n.c.keyspace)
	}
	return ks, tb, nil
}

// nodetoolOn runs a nodetool command on a keyspace and, when named, one
// table of it.
func (n *Node) nodetoolOn(ctx context.Context, cmd, name string) error {
	ks, tb, err := n.table(name)
	if err != nil {
		return err
	}
	args := []string{cmd, ks}
	if tb != "" {
		args = append(args, tb)
	}
	if _, err := n.Nodetool(ctx, args...); err != nil {
		return fmt.Errorf("nodetool %s on %s: %w", strings.Join(args, " "), n.Name, err)
	}
	return nil
}

// Flush writes the table's memtables to SSTables (nodetool flush).
func (n *Node) Flush(ctx context.Context, table string) error {
	return n.nodetoolOn(ctx, "flush", table)
}

// Compact compacts every SSTable of the table (nodetool compact).
func (n *Node) Compact(ctx context.Context, table string) error {
	return n.nodetoolOn(ctx, "compact", table)
}

// CompactFiles compacts exactly these SSTables into one (nodetool compact
// --user-defined): what an operator does to a chosen set, and what keeps
// the others as they are.
func (n *Node) CompactFiles(ctx context.Context, files []string) error {
	if len(files) == 0 {
		return fmt.Errorf("compact on %s: no SSTable named", n.Name)
	}
	for _, f := range files {
		if !strings.HasPrefix(f, dataDir+"/data/") || !strings.HasSuffix(f, "-Data.db") || strings.Contains(f, "..") {
			return fmt.Errorf("compact on %s: %q is no SSTable of the node's data directory", n.Name, f)
		}
	}
	if _, err := n.Nodetool(ctx, append([]string{"compact", "--user-defined"}, files...)...); err != nil {
		return fmt.Errorf("nodetool compact --user-defined on %s: %w", n.Name, err)
	}
	return nil
}

// SSTables are the Data.db paths of the table's live SSTables (of every
// table of the keyspace for ""), sorted: what a mark remembers.
func (n *Node) SSTables(ctx context.Context, table string) ([]string, error) {
	ks, tb, err := n.table(table)
	if err != nil {
		return nil, err
	}
	dir := tb + "-*"
	if tb == "" {
		dir = "*"
	}
	// A table's directory is NAME-ID: "paxos-*" is not paxos_repair_history.
	out, err := n.Exec(ctx, "sh", "-c", "ls "+dataDir+"/data/"+ks+"/"+dir+"/*-Data.db 2>/dev/null || true")
	if err != nil {
		return nil, fmt.Errorf("list the SSTables of %s.%s on %s: %w", ks, tb, n.Name, err)
	}
	files := strings.Fields(out)
	slices.Sort(files)
	return files, nil
}

// SetAutoCompaction switches the table's autocompaction on or off
// (nodetool enableautocompaction, disableautocompaction); off is noted on
// the node's disk first, for the heal.
func (n *Node) SetAutoCompaction(ctx context.Context, table string, on bool) error {
	ks, tb, err := n.table(table)
	if err != nil {
		return err
	}
	// "KS." is the whole keyspace, as table reads it back.
	line := "autocompaction " + ks + "." + tb
	if !on {
		if err := n.noteMaintenance(ctx, line, true); err != nil {
			return err
		}
		return n.nodetoolOn(ctx, "disableautocompaction", table)
	}
	if err := n.nodetoolOn(ctx, "enableautocompaction", table); err != nil {
		return err
	}
	return n.noteMaintenance(ctx, line, false)
}

// SetGCGrace sets the table's gc_grace_seconds (ALTER TABLE through a
// session pinned to the node); another value than the default is noted on
// the node's disk first, for the heal.
func (n *Node) SetGCGrace(ctx context.Context, table string, seconds int) error {
	ks, tb, err := n.table(table)
	if err != nil {
		return err
	}
	if tb == "" || seconds < 0 {
		return fmt.Errorf("gc_grace_seconds %d of %q: want a table and seconds, 0 or more", seconds, table)
	}
	line := "gc-grace " + ks + "." + tb
	if seconds != defaultGCGrace {
		if err := n.noteMaintenance(ctx, line, true); err != nil {
			return err
		}
	}
	s, err := n.c.PinnedSession(ctx, n)
	if err != nil {
		return fmt.Errorf("gc_grace_seconds of %s.%s through %s: %w", ks, tb, n.Name, err)
	}
	defer s.Close()
	if err := s.Query(fmt.Sprintf(`ALTER TABLE "%s"."%s" WITH gc_grace_seconds = %d`, ks, tb, seconds)).ExecContext(ctx); err != nil {
		return fmt.Errorf("gc_grace_seconds of %s.%s through %s: %w", ks, tb, n.Name, err)
	}
	if seconds == defaultGCGrace {
		return n.noteMaintenance(ctx, line, false)
	}
	return nil
}

// noteMaintenance adds line to the node's maintenance file (or takes it
// out).
func (n *Node) noteMaintenance(ctx context.Context, line string, add bool) error {
	script := `grep -qxF "$1" "$2" 2>/dev/null || printf '%s\n' "$1" >> "$2"`
	if !add {
		script = `[ -f "$2" ] || exit 0; grep -vxF "$1" "$2" > "$2.tmp"; mv "$2.tmp" "$2"; [ -s "$2" ] || rm -f "$2"`
	}
	if _, err := n.Exec(ctx, "sh", "-c", script, "note", line, maintenanceFile); err != nil {
		return fmt.Errorf("note %q on %s: %w", line, n.Name, err)
	}
	return nil
}

// MaintenanceChanges are the changes of maintenance windows the node's
// file names: what a heal has to undo.
func (n *Node) MaintenanceChanges(ctx context.Context) ([]string, error) {
	out, err := n.Exec(ctx, "sh", "-c", "cat "+maintenanceFile+" 2>/dev/null || true")
	if err != nil {
		return nil, fmt.Errorf("maintenance changes on %s: %w", n.Name, err)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// UndoMaintenance switches autocompaction back on and puts the default
// gc_grace_seconds back where the node's file says a window changed them.
func (n *Node) UndoMaintenance(ctx context.Context) error {
	changes, err := n.MaintenanceChanges(ctx)
	if err != nil {
		return err
	}
	for _, c := range changes {
		what, table, _ := strings.Cut(c, " ")
		switch what {
		case "autocompaction":
			err = n.SetAutoCompaction(ctx, table, true)
		case "gc-grace":
			err = n.SetGCGrace(ctx, table, defaultGCGrace)
		default:
			err = n.noteMaintenance(ctx, c, false) // not ours to undo: forgotten
		}
		if err != nil {
			return err
		}
	}
	return nil
}
