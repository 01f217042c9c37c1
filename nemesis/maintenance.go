package nemesis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Maintenance is an operator's routine work on a node, one operation a
// window: a flush, a compaction (of a table, or of chosen SSTables: those
// written since a mark an earlier flush set), a Paxos repair, autocompaction
// switched off or on, a table's gc_grace_seconds. None of it is a fault in
// itself; together, in the order an operator may well run them, they can
// put a node's Paxos state in a shape no failure would (CASSANDRA-19617: a
// commit purged from one SSTable while an older one survives in another).
// A schedule's step says which operation (its value); a drawn window
// flushes, compacts or repairs the run's keyspace on one node.
const Maintenance = "maintenance"

// The operations (MaintenanceStart.Op).
const (
	OpFlush             = "flush"
	OpCompact           = "compact"
	OpRepairPaxos       = "repair-paxos"
	OpAutoCompactionOff = "autocompaction-off"
	OpAutoCompactionOn  = "autocompaction-on"
	OpGCGrace           = "gc-grace"
)

// MaintenanceOps are the operations, in the order the reference lists them.
var MaintenanceOps = []string{OpFlush, OpCompact, OpRepairPaxos, OpAutoCompactionOff, OpAutoCompactionOn, OpGCGrace}

// drawnOps are what a drawn window does: the operations that change no
// setting, so that nothing of a drawn run outlives its window.
var drawnOps = []string{OpFlush, OpCompact, OpRepairPaxos}

// DefaultGCGrace is Cassandra's default gc_grace_seconds (ten days), which
// the heal puts back on a table a gc-grace window changed.
const DefaultGCGrace = 864000

var maintenanceKind = Kind{
	Name: Maintenance, Scope: ScopeNode, Color: "#9edae5",
	Doc: "An operator's maintenance on one node or several (a step's value says which operation): flush a table (with a " +
		"mark, remembering its SSTables), compact a table or only its SSTables newer than a mark (nodetool compact " +
		"--user-defined), repair Paxos (nodetool repair --paxos-only of the run's keyspace), switch a table's " +
		"autocompaction off or on, or set a table's gc_grace_seconds. A table is keyspace.table, or a table of the run's " +
		"keyspace. A drawn window flushes, compacts or repairs the run's keyspace on one node. The heal switches " +
		"autocompaction back on and puts gc_grace_seconds back to its default where a window changed them.",
	Needs:      []Capability{CapMaintenance},
	StartValue: MaintenanceStart{NewerThan: "before-delete", Op: OpCompact, Table: "system.paxos"},
	StopValue: MaintenanceStop{MS: 2310, SSTables: map[string][]string{"n3": {
		"/var/lib/cassandra/data/system/paxos-b7b7f0c2fd0a34108c053ef614bb7c2d/nb-12-big-Data.db"}}},
	Check: checkMaintenance,
	New:   func() Injector { return &maintenance{marks: map[string]map[string][]string{}} },
}

// MaintenanceStart is the value of a start-maintenance line.
type MaintenanceStart struct {
	GCGrace   *int   `json:"gc_grace,omitempty" doc:"gc-grace: the table's new gc_grace_seconds"`
	Mark      string `json:"mark,omitempty" doc:"flush: remember the table's SSTables after the flush under this name, on each node"`
	NewerThan string `json:"newer_than,omitempty" doc:"compact: compact only the table's SSTables that a flush's mark of this name did not hold (nodetool compact --user-defined)"`
	Op        string `json:"op" doc:"flush, compact, repair-paxos, autocompaction-off, autocompaction-on or gc-grace"`
	Table     string `json:"table,omitempty" doc:"keyspace.table, or a table of the run's keyspace; none: the run's keyspace (every table of it)"`
}

// MaintenanceStop is the value of a stop-maintenance line.
type MaintenanceStop struct {
	Error    string              `json:"error,omitempty" doc:"what failed, on which node"`
	MS       int64               `json:"ms" doc:"how long the operation took on the nodes, in milliseconds"`
	SSTables map[string][]string `json:"sstables,omitempty" doc:"per node: the SSTables a mark holds (flush with a mark), or those compacted (compact newer_than)"`
}

// MaintenanceNode is a node an operator maintains (cluster.Node implements
// it): the node action of CapMaintenance. A table is as MaintenanceStart's.
type MaintenanceNode interface {
	Flush(ctx context.Context, table string) error
	Compact(ctx context.Context, table string) error
	// CompactFiles compacts exactly these SSTables (their Data.db paths,
	// as SSTables names them) into one.
	CompactFiles(ctx context.Context, files []string) error
	// SSTables are the Data.db paths of the table's live SSTables.
	SSTables(ctx context.Context, table string) ([]string, error)
	RepairPaxos(ctx context.Context) error
	SetAutoCompaction(ctx context.Context, table string, on bool) error
	SetGCGrace(ctx context.Context, table string, seconds int) error
	// MaintenanceChanges are the changes of windows that outlive them,
	// as the node keeps them (autocompaction off, a gc_grace_seconds set);
	// UndoMaintenance undoes every one.
	MaintenanceChanges(ctx context.Context) ([]string, error)
	UndoMaintenance(ctx context.Context) error
}

// tableRE is a table as a step names it: keyspace.table or table.
var tableRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]{0,47}\.)?[A-Za-z_][A-Za-z0-9_]{0,47}$`)

var markRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// parseMaintenance reads a step's value, refusing in one line what no
// window could do.
func parseMaintenance(raw json.RawMessage) (MaintenanceStart, error) {
	var v MaintenanceStart
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, fmt.Errorf("value %s is not a maintenance's: %w", oneLine(raw), err)
	}
	return v, v.validate()
}

func (v MaintenanceStart) validate() error {
	if !slices.Contains(MaintenanceOps, v.Op) {
		return fmt.Errorf("op %q: want one of %s", v.Op, strings.Join(MaintenanceOps, ", "))
	}
	if v.Table != "" && !tableRE.MatchString(v.Table) {
		return fmt.Errorf("table %q: want keyspace.table or a table of the run's keyspace", v.Table)
	}
	if v.Mark != "" && v.Op != OpFlush {
		return fmt.Errorf("%s: a mark is a flush's", v.Op)
	}
	if v.Mark != "" && !markRE.MatchString(v.Mark) {
		return fmt.Errorf("mark %q: want letters, digits, '.', '_' or '-'", v.Mark)
	}
	if v.NewerThan != "" && v.Op != OpCompact {
		return fmt.Errorf("%s: newer_than is a compaction's", v.Op)
	}
	if v.NewerThan != "" && v.Table == "" {
		return fmt.Errorf("compact newer_than %q names no table: a mark is one table's SSTables", v.NewerThan)
	}
	if (v.GCGrace != nil) != (v.Op == OpGCGrace) {
		return errors.New("gc_grace goes with op gc-grace, and gc-grace needs it")
	}
	if v.GCGrace != nil && *v.GCGrace < 0 {
		return fmt.Errorf("gc_grace %d: want seconds, 0 or more", *v.GCGrace)
	}
	switch v.Op {
	case OpRepairPaxos:
		if v.Table != "" {
			return errors.New("repair-paxos repairs the run's keyspace: no table")
		}
	case OpGCGrace:
		// The heal puts the default back on the run's keyspace's tables
		// only: a system table's is not a step's to change.
		if v.Table == "" || strings.Contains(v.Table, ".") {
			return fmt.Errorf("gc-grace of %q: name one table of the run's keyspace", v.Table)
		}
	case OpAutoCompactionOff:
		if strings.Contains(v.Table, ".") && v.Table != "system.paxos" {
			return fmt.Errorf("autocompaction-off of %q: the run's keyspace or system.paxos (what the heal switches back on)", v.Table)
		}
	}
	return nil
}

// checkMaintenance refuses, before the run, a schedule's maintenance step
// that cannot be done: a value that is not one, and a compaction of the
// SSTables newer than a mark no earlier flush sets on each of its nodes.
// Drawn windows need nothing.
func checkMaintenance(e *Env) error {
	if e.schedule == nil {
		return nil
	}
	marked := map[string][]string{} // mark -> nodes an earlier flush set it on
	for i, st := range e.schedule.Steps {
		if st.Kind != Maintenance || len(bytes.TrimSpace(st.Value)) == 0 {
			continue
		}
		v, err := parseMaintenance(st.Value)
		if err != nil {
			return fmt.Errorf("schedule step %d: %w", i+1, err)
		}
		nodes := st.Nodes
		if v.Mark != "" || v.NewerThan != "" {
			if len(nodes) == 0 {
				return fmt.Errorf("schedule step %d: a mark is one node's SSTables: name the nodes", i+1)
			}
		}
		if v.Mark != "" {
			marked[v.Mark] = append(marked[v.Mark], nodes...)
		}
		if v.NewerThan != "" {
			for _, n := range nodes {
				if !slices.Contains(marked[v.NewerThan], n) {
					return fmt.Errorf("schedule step %d: compacts the SSTables newer than mark %q on node %s, which no earlier flush sets there", i+1, v.NewerThan, n)
				}
			}
		}
	}
	return nil
}

type maintenance struct {
	mu    sync.Mutex
	marks map[string]map[string][]string // mark -> node -> its SSTables then
}

func maintainerOf(t Target) (MaintenanceNode, error) {
	m, ok := t.Node.(MaintenanceNode)
	if !ok {
		return nil, fmt.Errorf("node %s cannot be maintained (flush, compact, repair)", t.Name)
	}
	return m, nil
}

// Start does the operation on its nodes (side by side) and returns once it
// is done: the window is the operation, and a later step follows its end.
// The start line is written before it begins; the stop line says what it
// did, or what failed.
func (m *maintenance) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	// Every draw before anything that waits.
	v := MaintenanceStart{Op: drawnOps[e.Sched.IntN(len(drawnOps))]}
	targets := []Target{e.Targets[e.Sched.IntN(len(e.Targets))]}
	if e.step != nil && len(bytes.TrimSpace(e.step.Value)) > 0 {
		var err error
		if v, err = parseMaintenance(e.step.Value); err != nil {
			return nil, fmt.Errorf("nemesis: %s: %w", Maintenance, err)
		}
	}
	if ts, err := e.givenTargets(); err != nil {
		return nil, err
	} else if len(ts) > 0 {
		targets = ts
	}
	names := make([]string, len(targets))
	nodes := make([]MaintenanceNode, len(targets))
	for i, t := range targets {
		n, err := maintainerOf(t)
		if err != nil {
			return nil, fmt.Errorf("nemesis: %s: %w", Maintenance, err)
		}
		names[i], nodes[i] = t.Name, n
	}
	if err := e.Record(history.StartF(Maintenance), v, names); err != nil {
		return nil, err
	}
	begin := time.Now()
	var mu sync.Mutex
	out := MaintenanceStop{}
	errs := parallel(targets, func(t Target) error {
		i := slices.Index(names, t.Name)
		files, err := m.do(ctx, v, t.Name, nodes[i])
		if len(files) > 0 {
			mu.Lock()
			if out.SSTables == nil {
				out.SSTables = map[string][]string{}
			}
			out.SSTables[t.Name] = files
			mu.Unlock()
		}
		if err != nil {
			return fmt.Errorf("%s on %s: %w", v.Op, t.Name, err)
		}
		return nil
	})
	out.MS = time.Since(begin).Milliseconds()
	if err := errors.Join(errs...); err != nil {
		out.Error = strings.ReplaceAll(err.Error(), "\n", "; ")
		e.Log.Warn("nemesis: maintenance failed", "op", v.Op, "nodes", names, "err", err)
	}
	return func(ctx context.Context) error {
		return e.Record(history.StopF(Maintenance), out, names)
	}, nil
}

// do runs the operation on one node; files are the SSTables a mark took or
// a compaction compacted.
func (m *maintenance) do(ctx context.Context, v MaintenanceStart, name string, n MaintenanceNode) ([]string, error) {
	switch v.Op {
	case OpFlush:
		if err := n.Flush(ctx, v.Table); err != nil {
			return nil, err
		}
		if v.Mark == "" {
			return nil, nil
		}
		files, err := n.SSTables(ctx, v.Table)
		if err != nil {
			return nil, err
		}
		m.mu.Lock()
		if m.marks[v.Mark] == nil {
			m.marks[v.Mark] = map[string][]string{}
		}
		m.marks[v.Mark][name] = files
		m.mu.Unlock()
		return files, nil
	case OpCompact:
		if v.NewerThan == "" {
			return nil, n.Compact(ctx, v.Table)
		}
		m.mu.Lock()
		kept, ok := m.marks[v.NewerThan][name]
		m.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("no mark %q on this node (no flush set it in this run)", v.NewerThan)
		}
		all, err := n.SSTables(ctx, v.Table)
		if err != nil {
			return nil, err
		}
		var newer []string
		for _, f := range all {
			if !slices.Contains(kept, f) {
				newer = append(newer, f)
			}
		}
		if len(newer) == 0 {
			return nil, fmt.Errorf("no SSTable of %s newer than mark %q", v.Table, v.NewerThan)
		}
		return newer, n.CompactFiles(ctx, newer)
	case OpRepairPaxos:
		return nil, n.RepairPaxos(ctx)
	case OpAutoCompactionOff, OpAutoCompactionOn:
		return nil, n.SetAutoCompaction(ctx, v.Table, v.Op == OpAutoCompactionOn)
	case OpGCGrace:
		return nil, n.SetGCGrace(ctx, v.Table, *v.GCGrace)
	}
	return nil, fmt.Errorf("unknown op %q", v.Op)
}

// Reset undoes what maintenance windows left changed on the node
// (autocompaction off, a gc_grace_seconds set), as the node keeps them. A
// node that does not run is left to the kinds that start it.
func (*maintenance) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	n, ok := t.Node.(MaintenanceNode)
	if !ok {
		return false, nil
	}
	if st, err := t.Node.State(ctx); err != nil || st != "running" {
		return false, err
	}
	changes, err := n.MaintenanceChanges(ctx)
	if err != nil || len(changes) == 0 {
		return false, err
	}
	if err := n.UndoMaintenance(ctx); err != nil {
		return false, fmt.Errorf("nemesis: undo %s on %s: %w", strings.Join(changes, ", "), t.Name, err)
	}
	return true, nil
}

// oneLine is a JSON value on one line, for a refusal's line.
func oneLine(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return strings.Join(strings.Fields(string(raw)), " ")
	}
	return b.String()
}
