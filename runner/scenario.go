package runner

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/scenario"
	"github.com/lockcheck/lockcheck/workload"
)

// ScenarioTest is the Test of run r (0-based) of a scenario row: its recipe,
// workload, faults, duration, interval, pins, clients and locks, and the
// run's seed. The caller sets Store, Log and Progress.
func ScenarioTest(row scenario.Row, run int) (Test, error) {
	var recipe Recipe
	switch {
	case row.Shape() == workload.ShapeRegister:
		recipe = RegisterRecipe()
	case row.Command != "":
		command, err := repoCommand(row.Command)
		if err != nil {
			return Test{}, fmt.Errorf("row %s: %w", row.Name, err)
		}
		recipe = CmdRecipe(command, cmp.Or(row.Promise, history.PromiseMutex))
		recipe.Name = row.Recipe
	default:
		var err error
		if recipe, err = LookupRecipe(row.Recipe); err != nil {
			return Test{}, fmt.Errorf("row %s: %w", row.Name, err)
		}
	}
	t := Defaults()
	t.Recipe, t.Workload, t.Nemesis = recipe, row.Shape(), row.Faults
	t.Time, t.Interval, t.Seed = row.Time, row.Interval, row.RunSeed(run)
	t.Clients, t.Locks, t.Quiet = row.ClientCount(), row.LockCount(), scenario.Quiet
	t.PinClients, t.DCLocal, t.RetireStuck = row.Pin, row.DCLocal, row.RetireStuck
	// A shrunk row's empty schedule is a flaw that needs no fault: the run
	// deals none (row.Faults is empty too).
	if row.Schedule != nil && len(row.Schedule.Steps) > 0 {
		s := *row.Schedule
		t.Schedule, t.Nemesis = &s, s.Kinds()
	}
	t.SkewAhead = row.SkewAhead
	t.StuckBound = row.StuckBound()
	if row.KillTarget != "" {
		t.KillTarget = row.KillTarget
	}
	t.SkewMin, t.SkewMax = row.SkewMin, row.SkewMax
	if err := t.Validate(); err != nil {
		return Test{}, fmt.Errorf("row %s: %w", row.Name, err)
	}
	return t, nil
}

// repoCommand is a row's plug-in command with its program, a path relative
// to the repository's root, made absolute: the root is the nearest
// directory at or above the working directory (a package's directory under
// go test, the checkout under lockcheck matrix) where the program exists.
// The program need not be built yet (make plugins); its directory must be
// there.
func repoCommand(command string) (string, error) {
	prog, rest, _ := strings.Cut(strings.TrimSpace(command), " ")
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, filepath.Dir(prog))); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return strings.TrimSpace(filepath.Join(dir, prog) + " " + rest), nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("plug-in %q: no directory %s in a checkout at or above the working directory", command, filepath.Dir(prog))
		}
		dir = parent
	}
}

// ScenarioClusterOptions are the options of a cluster of configuration c,
// name and logger aside. lazyFS is the lockcheck-lazyfs binary, needed only
// by a configuration on the lazy filesystem.
func ScenarioClusterOptions(c scenario.Cluster, lazyFS string) ([]cluster.Option, error) {
	var opts []cluster.Option
	if c.Version != "" {
		opts = append(opts, cluster.WithVersion(c.Version))
	}
	if c.Nodes > 0 {
		opts = append(opts, cluster.WithNodes(c.Nodes))
	}
	if c.Paxos != "" {
		opts = append(opts, cluster.WithPaxos(c.Paxos))
	}
	if c.DCs > 1 {
		opts = append(opts, cluster.WithDCs(c.DCs))
	}
	if c.Spares > 0 {
		opts = append(opts, cluster.WithSpares(c.Spares))
	}
	if c.SkipPaxosRepair {
		opts = append(opts, cluster.WithSkipPaxosRepair(true))
	}
	if c.Commitlog != "" {
		opts = append(opts, cluster.WithCommitlogSync(c.Commitlog))
	}
	if c.LazyFS {
		if lazyFS == "" {
			return nil, fmt.Errorf("%s needs the lockcheck-lazyfs binary", c)
		}
		opts = append(opts, cluster.WithLazyFS(lazyFS))
	}
	if err := cluster.ValidateOptions(opts...); err != nil {
		return nil, err
	}
	return opts, nil
}

// ScenarioFits says whether a running cluster is of configuration c, so
// that a row can run on it rather than on a cluster started for it.
func ScenarioFits(cl *cluster.Cluster, c scenario.Cluster) bool {
	want := scenario.Cluster{Nodes: len(cl.Nodes()), Paxos: cl.Paxos(), LazyFS: cl.LazyFS(), Commitlog: cl.CommitlogSync(), DCs: len(cl.DCs()),
		Spares: len(cl.Spares()), SkipPaxosRepair: cl.SkipPaxosRepair()}
	if c.Version != "" {
		if v, err := cluster.LookupVersion(c.Version); err != nil || v.Name != cl.Version().Name {
			return false
		}
		want.Version = c.Version
	} else if cl.Version().Name != cluster.DefaultVersion {
		return false
	}
	return want.Key() == c.Key()
}
