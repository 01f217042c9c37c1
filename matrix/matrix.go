// Package matrix runs scenario rows: a row's run as a runner.Test (its
// Spec, scenario.Row.Spec, with the lock the row names), the cluster a row
// needs and whether a running one fits. `lockcheck matrix` and the runner's
// jepsen drivers (TestMatrix, TestConfigs) use it; the public Go API does
// not, so that a program using lockcheck links no scenario table or rates.
package matrix

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenario"
	"github.com/lockcheck/lockcheck/workload"
)

// Test is the runner.Test of run r (0-based) of a scenario row: the row's
// Spec and the run's seed, the lock it names (a recipe, the register, or a
// plug-in command), and its schedule. The caller sets Store, Log and
// Progress.
func Test(row scenario.Row, run int) (runner.Test, error) {
	var recipe runner.Recipe
	switch {
	case row.Shape() == workload.ShapeRegister:
		recipe = runner.RegisterRecipe()
	case row.Command != "":
		command, err := repoCommand(row.Command)
		if err != nil {
			return runner.Test{}, fmt.Errorf("row %s: %w", row.Name, err)
		}
		recipe = runner.CmdRecipe(command, cmp.Or(row.Promise, history.PromiseMutex))
		recipe.Name = row.Recipe
	default:
		var err error
		if recipe, err = runner.LookupRecipe(row.Recipe); err != nil {
			return runner.Test{}, fmt.Errorf("row %s: %w", row.Name, err)
		}
	}
	t := runner.Test{Spec: row.Spec(run), Recipe: recipe}
	// A shrunk row's empty schedule is a flaw that needs no fault: the run
	// deals none (row.Faults is empty too).
	if row.Schedule != nil && len(row.Schedule.Steps) > 0 {
		s := *row.Schedule
		t.Schedule, t.Nemesis = &s, s.Kinds()
	}
	if err := t.Validate(); err != nil {
		return runner.Test{}, fmt.Errorf("row %s: %w", row.Name, err)
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
