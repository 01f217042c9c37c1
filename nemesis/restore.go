package nemesis

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/faultkind"
	"github.com/lockcheck/lockcheck/history"
)

// Restore restores a node from an old snapshot, as an operator restoring a
// node from its backup does: the window's start snapshots the node's data,
// Paxos state included; its stop stops the node, puts the snapshot back
// into its data directories (the newer SSTables and the commitlog removed)
// and starts it. Until repair, read repair or a Paxos round brings it up to
// date, the node serves what it held at the snapshot: promises, accepts,
// commits and writes it acknowledged since are forgotten.
const Restore = "restore"

// RestorePrefix begins the tag of every snapshot the restore windows take:
// the heal clears the snapshots of that prefix (an operator's own, which a
// schedule's step may restore, are never touched).
const RestorePrefix = "lockcheck-restore-"

var restoreKind = Kind{
	Name: Restore, Scope: ScopeNode, Color: "#8c564b",
	Doc: "Restores a node from an old snapshot, as an operator restoring from a backup does: the start snapshots the " +
		"node's data (nodetool snapshot: every keyspace, system.paxos and system.paxos_repair_history included); the " +
		"stop stops the node, puts the snapshot back into its data directories (the user keyspaces' and the Paxos " +
		"tables' newer SSTables, the commitlog and the saved caches removed) and starts it, serving its data as it " +
		"was at the start. A schedule's step may name several nodes (restored together) or, with existing, a " +
		"snapshot taken before its window.",
	Needs:      []Capability{CapRestore, CapRestart},
	Restarts:   true,
	StartValue: RestoreStart{ReplicatesAll: true, Snapshot: RestorePrefix + "5f0c1e2a"},
	StopValue:  RestoreStop{Commitlog: 2, DownMS: 41250, Removed: 118, Snapshot: RestorePrefix + "5f0c1e2a", Tables: 24},
	Check:      checkRestore,
	Cause:      &restoreCause,
	New:        func() Injector { return &restore{} },
}

// RestoreStart is the value of a start-restore line.
type RestoreStart struct {
	Existing      bool   `json:"existing,omitempty" doc:"the window took no snapshot: it restores one taken before it (by an earlier step of the schedule, or the operator's own)"`
	ReplicatesAll bool   `json:"replicates_all" doc:"the node holds a replica of every key of the keyspace (its data centre has no more nodes than the replication factor)"`
	Snapshot      string `json:"snapshot" doc:"the snapshot's tag (nodetool snapshot -t), taken at the start unless existing"`
}

// RestoreStop is the value of a stop-restore line.
type RestoreStop struct {
	Commitlog int    `json:"commitlog" doc:"commitlog segments removed (their replay would bring back what the snapshot predates), over the nodes"`
	DownMS    int64  `json:"down_ms" doc:"from the stop's beginning until the nodes served again: the old state is served from the line's time minus this on"`
	Removed   int    `json:"removed" doc:"data files removed: the restored tables' newer SSTable components and transaction logs, and the files of the tables the snapshot has no copy of, over the nodes"`
	Snapshot  string `json:"snapshot" doc:"the snapshot put back"`
	Tables    int    `json:"tables" doc:"tables put back from the snapshot, over the nodes"`
}

// RestoreNode is a node that can be restored from a snapshot
// (cluster.Node implements it): the node action of CapRestore.
type RestoreNode interface {
	// Snapshot takes a snapshot of every keyspace, Paxos state included,
	// under tag.
	Snapshot(ctx context.Context, tag string) error
	// Snapshots are the tags of the snapshots on the node's disk.
	Snapshots(ctx context.Context) ([]string, error)
	ClearSnapshot(ctx context.Context, tag string) error
	// RestoreSnapshot stops the node, puts snapshot tag back and starts it,
	// returning once it serves; it says what it put back and removed. Done
	// twice it is done once.
	RestoreSnapshot(ctx context.Context, tag string) (tables, removed, commitlog int, err error)
	// Restoring is the snapshot of a restore a killed harness left half
	// done ("" when none).
	Restoring(ctx context.Context) (string, error)
	// ReplicatesAll says whether the node holds a replica of every key.
	ReplicatesAll() bool
}

// restoreCause: a restored node forgets what it acknowledged since its
// snapshot, Paxos promises and accepts included. A quorum that counts it
// and no replica that kept the newer state sees the lock as it was: a
// second grant, a fencing token handed out again (token-not-increasing),
// a register value gone back. The node keeps its old state after the
// window until something repairs it: lasting, but only from the restore
// on (Explain reads the anomaly's end against the stop line).
var restoreCause = faultkind.Cause{Lasting: true, Anomalies: []string{faultkind.TokenOrder, faultkind.Overlap,
	faultkind.NonLinearizable, faultkind.Duplicate, faultkind.StaleWrite, faultkind.LostAdd}, Explain: explainRestore}

func explainRestore(w history.FaultWindow, a faultkind.Anomaly) (string, bool) {
	v, ok := faultkind.Decode[RestoreStart](w.Value)
	if !ok || v.Snapshot == "" || !w.Closed || len(w.Nodes) == 0 {
		return "", false // a window never stopped restored nothing
	}
	stop, ok := faultkind.Decode[RestoreStop](w.Stop)
	if !ok {
		return "", false
	}
	// The node serves its old state only once it is back: an anomaly that
	// was over before the restore began is not its doing.
	back := w.End - stop.DownMS*int64(time.Millisecond)
	if a.End < back {
		return "", false
	}
	taken := "taken at " + faultkind.Secs(w.Start)
	if v.Existing {
		taken = "taken before the window"
	}
	who, was, it, its := w.Nodes[0], "was", "it", "its"
	if len(w.Nodes) != 1 {
		who, was, it, its = strings.Join(w.Nodes, " and "), "were", "they", "their"
	}
	s := fmt.Sprintf("%s %s restored from %s snapshot %s %s (Paxos state included; down from %s, serving again by %s): %s forgot "+
		"the writes, Paxos promises and accepts %s had acknowledged since, so a quorum without a replica holding the newer "+
		"state read the key as it was then (a lock's row, a fencing token handed out again, an acknowledged value gone back)",
		who, was, its, v.Snapshot, taken, faultkind.Secs(back), faultkind.Secs(w.End), it, it)
	if !v.ReplicatesAll {
		s += ", if the lock's key is among those the node replicates"
	}
	return s, true
}

var restoreTagRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// checkRestore refuses, before the run, a schedule's restore step whose
// snapshot cannot be there when its window starts: a tag that is no tag, a
// step restoring an existing snapshot without naming its node, or naming a
// snapshot no earlier step takes on that node and the node does not have;
// and a step taking a snapshot whose tag the heal would not clear, or that
// an earlier step takes. Drawn windows take their own snapshots: nothing
// to check.
func checkRestore(e *Env) error {
	if e.schedule == nil {
		return nil
	}
	taken := map[string][]string{} // tag -> nodes an earlier step took it on
	for i, st := range e.schedule.Steps {
		if st.Kind != Restore {
			continue
		}
		var v RestoreStart
		if len(strings.TrimSpace(string(st.Value))) > 0 {
			var ok bool
			if v, ok = faultkind.Decode[RestoreStart](st.Value); !ok {
				return fmt.Errorf("schedule step %d: value %s is not a restore's", i+1, st.Value)
			}
		}
		if v.Snapshot == "" {
			if v.Existing {
				return fmt.Errorf("schedule step %d: restores an existing snapshot and names none", i+1)
			}
			continue
		}
		if !restoreTagRE.MatchString(v.Snapshot) {
			return fmt.Errorf("schedule step %d: snapshot %q: want letters, digits, '.', '_' or '-'", i+1, v.Snapshot)
		}
		if !v.Existing {
			if !strings.HasPrefix(v.Snapshot, RestorePrefix) {
				return fmt.Errorf("schedule step %d: takes snapshot %q, whose tag does not begin with %q (the heal clears only those)", i+1, v.Snapshot, RestorePrefix)
			}
			if _, dup := taken[v.Snapshot]; dup {
				return fmt.Errorf("schedule step %d: takes snapshot %q, which an earlier step takes", i+1, v.Snapshot)
			}
			taken[v.Snapshot] = st.Nodes
			continue
		}
		if len(st.Nodes) == 0 {
			return fmt.Errorf("schedule step %d: restores snapshot %q and names no node (a snapshot is one node's)", i+1, v.Snapshot)
		}
		for _, name := range st.Nodes {
			if slices.Contains(taken[v.Snapshot], name) {
				continue
			}
			if strings.HasPrefix(v.Snapshot, RestorePrefix) {
				// The heal before the run clears every snapshot of that
				// prefix: only an earlier step's can be there.
				return fmt.Errorf("schedule step %d: restores snapshot %q on node %s, which no earlier step takes there (the heal before the run clears %s snapshots)",
					i+1, v.Snapshot, name, RestorePrefix)
			}
			has, err := snapshotsOn(e, name)
			if err != nil {
				return fmt.Errorf("schedule step %d: %w", i+1, err)
			}
			if !slices.Contains(has, v.Snapshot) {
				return fmt.Errorf("schedule step %d: restores snapshot %q on node %s, which no earlier step takes there and the node does not have (it has: %s)",
					i+1, v.Snapshot, name, listOrNone(has))
			}
		}
	}
	return nil
}

// snapshotsOn asks the node of that name for its snapshots (a node that
// cannot keep any has none).
func snapshotsOn(e *Env, name string) ([]string, error) {
	i := slices.IndexFunc(e.Targets, func(t Target) bool { return t.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("names node %q, which this cluster does not have", name)
	}
	rn, ok := e.Targets[i].Node.(RestoreNode)
	if !ok {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return rn.Snapshots(ctx)
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

type restore struct{}

func (*restore) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	targets := []Target{e.Targets[e.Sched.IntN(len(e.Targets))]}
	tag := fmt.Sprintf("%s%08x", RestorePrefix, e.Sched.Uint32())
	if ts, err := e.givenTargets(); err != nil {
		return nil, err
	} else if len(ts) > 0 {
		targets = ts
	}
	existing := false
	if v, ok := given[RestoreStart](e); ok && v.Snapshot != "" {
		tag, existing = v.Snapshot, v.Existing
	}
	names := make([]string, len(targets))
	nodes := make([]RestoreNode, len(targets))
	all := true
	for i, t := range targets {
		rn, ok := t.Node.(RestoreNode)
		if !ok {
			return nil, fmt.Errorf("nemesis: restore: node %s cannot be restored from a snapshot", t.Name)
		}
		names[i], nodes[i] = t.Name, rn
		all = all && rn.ReplicatesAll()
	}
	if !existing {
		// Taken on every node at once (a nodetool call takes seconds
		// under load), so that they hold the same moment as nearly as
		// they can.
		errs := parallel(targets, func(t Target) error {
			if err := nodes[slices.Index(names, t.Name)].Snapshot(ctx, tag); err != nil {
				return fmt.Errorf("snapshot %s: %w", t.Name, err)
			}
			return nil
		})
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("nemesis: restore: %w", err)
		}
	}
	if err := e.Record(history.StartF(Restore), RestoreStart{Existing: existing, ReplicatesAll: all, Snapshot: tag}, names); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		begin := time.Now()
		stop := RestoreStop{Snapshot: tag}
		counts := make([][3]int, len(targets))
		errs := parallel(targets, func(t Target) error {
			i := slices.Index(names, t.Name)
			var err error
			counts[i][0], counts[i][1], counts[i][2], err = nodes[i].RestoreSnapshot(ctx, tag)
			return err
		})
		for _, c := range counts {
			stop.Tables += c[0]
			stop.Removed += c[1]
			stop.Commitlog += c[2]
		}
		stop.DownMS = time.Since(begin).Milliseconds()
		err := errors.Join(errs...)
		if err != nil {
			err = fmt.Errorf("nemesis: restore %v: %w", names, err)
		}
		return errors.Join(err, e.Record(history.StopF(Restore), stop, names))
	}, nil
}

// Reset starts a node left stopped (a restore killed between its stop and
// start, as kill's reset does), finishes a restore a killed harness left
// half done (its data directories part old, part new), and clears every
// snapshot the restore windows took (RestorePrefix): a run's snapshots pin
// its SSTables on disk until cleared.
func (*restore) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	healed, err := restartStopped(ctx, t)
	if err != nil {
		return healed, err
	}
	rn, ok := t.Node.(RestoreNode)
	if !ok {
		return healed, nil
	}
	if st, err := t.Node.State(ctx); err != nil || st != "running" {
		return healed, err // paused: pause's reset first, then the retry
	}
	var errs []error
	if tag, err := rn.Restoring(ctx); err != nil {
		return healed, err
	} else if tag != "" {
		healed = true
		if _, _, _, err := rn.RestoreSnapshot(ctx, tag); err != nil {
			errs = append(errs, fmt.Errorf("nemesis: finish the restore of %s from %s: %w", t.Name, tag, err))
		}
	}
	has, err := rn.Snapshots(ctx)
	if err != nil {
		return healed, errors.Join(append(errs, err)...)
	}
	for _, tag := range has {
		if !strings.HasPrefix(tag, RestorePrefix) {
			continue
		}
		healed = true
		if err := rn.ClearSnapshot(ctx, tag); err != nil {
			errs = append(errs, err)
		}
	}
	return healed, errors.Join(errs...)
}
