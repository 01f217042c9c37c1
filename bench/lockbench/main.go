// Command lockbench measures lock operations per second of each recipe on
// the running cluster (`lockcheck cluster up`) with no faults, driven by the
// harness (workload + streamed history), beside a raw gocql loop that issues
// the same statements as one `lease` cycle (acquire LWT, resource read and
// write, release LWT) on the same cluster in the same run.
//
//	go run ./bench/lockbench -time 10s -rounds 6 -clients 5
//
// Clients use a lock each (no contention): the figure is the harness's cost,
// not the lock's queue.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/workload"
)

func main() {
	dur := flag.Duration("time", 10*time.Second, "time per measurement")
	rounds := flag.Int("rounds", 6, "alternating rounds of the raw loop and the harness on lease")
	clients := flag.Int("clients", 5, "concurrent clients")
	recipes := flag.String("recipes", "lease,lease-fenced,racy,music,music-seq,bakery,bakery-one", "recipes to measure")
	plugins := flag.String("plugins", "", "instead: NAME=COMMAND,... --lock-cmd plug-ins, each alternated with the built-in lease")
	clusterName := flag.String("cluster", cluster.DefaultName, "the running cluster to attach to")
	vs := flag.String("vs", "", "instead: a second running cluster (e.g. one started with --lazyfs): the recipes alternate between the two")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var err error
	switch {
	case *vs != "":
		err = runVs(*clusterName, *vs, *dur, *rounds, *clients, strings.Split(*recipes, ","), log)
	case *plugins != "":
		err = runPlugins(*clusterName, *dur, *rounds, *clients, strings.Split(*plugins, ","), log)
	default:
		err = run(*clusterName, *dur, *rounds, *clients, strings.Split(*recipes, ","), log)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockbench:", err)
		os.Exit(2)
	}
}

func run(name string, d time.Duration, rounds, clients int, recipes []string, log *slog.Logger) error {
	ctx := context.Background()
	c, err := cluster.Attach(ctx, cluster.WithName(name))
	if err != nil {
		return err
	}
	env := runner.ClusterEnv{Cluster: c}
	s, err := c.Session(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	ks := c.Keyspace()
	// The schemas the raw loop uses.
	base := runner.Defaults()
	base.Log = log
	if _, _, closeFn, err := runner.Recipes()["lease"].Setup(ctx, env, &base); err != nil {
		return err
	} else {
		closeFn()
	}
	// The load of a shared machine drifts by a factor of 2-3 within
	// minutes, so the harness and the raw loop alternate in short rounds
	// and the comparison sums them: both see the same drift.
	var rawN, rawT, harN, harT float64
	lease, err := runner.LookupRecipe("lease")
	if err != nil {
		return err
	}
	for i := range rounds {
		r, err := rawLoop(ctx, s, ks, fmt.Sprintf("%s%d", time.Now().Format("150405"), i), clients, d)
		if err != nil {
			return err
		}
		h, _, err := harness(ctx, env, lease, clients, d, log)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "round %d: raw %.1f, harness lease %.1f cycles/s\n", i, r, h)
		rawN, rawT = rawN+r*d.Seconds(), rawT+d.Seconds()
		harN, harT = harN+h*d.Seconds(), harT+d.Seconds()
	}
	fmt.Printf("| what | cycles/s | history lines/s |\n| --- | --- | --- |\n")
	fmt.Printf("| raw gocql lease cycle (%d rounds of %v) | %.1f | |\n", rounds, d, rawN/rawT)
	fmt.Printf("| harness lease (%d rounds of %v, alternating) | %.1f | %.1f |\n", rounds, d, harN/harT, 6*harN/harT)
	for _, name := range recipes {
		r, err := runner.LookupRecipe(name)
		if err != nil {
			return err
		}
		cycles, lines, err := harness(ctx, env, r, clients, d, log)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Printf("| harness %s | %.1f | %.1f |\n", name, cycles, lines)
	}
	fmt.Printf("\nharness lease / raw: %.3f\n", (harN/harT)/(rawN/rawT))
	return nil
}

// runPlugins compares --lock-cmd plug-ins with the built-in lease: each
// round runs the built-in lease, then each plug-in, for d each, and the
// sums give the ratio (the processes' start is not timed: Setup runs first).
func runPlugins(name string, d time.Duration, rounds, clients int, plugins []string, log *slog.Logger) error {
	ctx := context.Background()
	c, err := cluster.Attach(ctx, cluster.WithName(name))
	if err != nil {
		return err
	}
	env := runner.ClusterEnv{Cluster: c}
	lease, err := runner.LookupRecipe("lease")
	if err != nil {
		return err
	}
	recipes := []runner.Recipe{lease}
	names := []string{"lease (built in)"}
	for _, p := range plugins {
		n, cmd, ok := strings.Cut(p, "=")
		if !ok {
			return fmt.Errorf("-plugins: %q: want NAME=COMMAND", p)
		}
		recipes = append(recipes, runner.CmdRecipe(cmd, history.PromiseMutex))
		names = append(names, n)
	}
	sums := make([]float64, len(recipes))
	for i := range rounds {
		for j, r := range recipes {
			cycles, _, err := harness(ctx, env, r, clients, d, log)
			if err != nil {
				return fmt.Errorf("%s: %w", names[j], err)
			}
			fmt.Fprintf(os.Stderr, "round %d: %s %.1f cycles/s\n", i, names[j], cycles)
			sums[j] += cycles
		}
	}
	fmt.Printf("| what (%d rounds of %v, alternating, %d clients) | cycles/s | ops/s | / built-in lease |\n| --- | --- | --- | --- |\n", rounds, d, clients)
	for j := range recipes {
		cps := sums[j] / float64(rounds)
		fmt.Printf("| %s | %.1f | %.1f | %.2f |\n", names[j], cps, 3*cps, sums[j]/sums[0])
	}
	return nil
}

// harness runs the workload for d and returns completed cycles (ok
// releases) and history lines per second.
func harness(ctx context.Context, env runner.ClusterEnv, r runner.Recipe, clients int, d time.Duration, log *slog.Logger) (float64, float64, error) {
	t := runner.Defaults()
	t.Log, t.Clients = log, clients
	newLock, res, closeFn, err := r.Setup(ctx, env, &t)
	if err != nil {
		return 0, 0, err
	}
	defer closeFn()
	dir, err := os.MkdirTemp("", "lockbench")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	w, err := history.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return 0, 0, err
	}
	rec := &counting{next: w}
	names := make([]string, clients)
	tag := time.Now().Format("150405.000")
	for i := range names {
		names[i] = fmt.Sprintf("bench-%s-%s-%d", r.Name, tag, i)
	}
	wl, err := workload.New(newLock, res, rec, workload.WithClients(clients), workload.WithLocks(names...),
		workload.WithPinnedLocks(), workload.WithHold(0), workload.WithThink(0), workload.WithStagger(0),
		workload.WithLogger(log))
	if err != nil {
		return 0, 0, err
	}
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	if err := wl.Run(rctx); err != nil {
		return 0, 0, err
	}
	el := time.Since(start).Seconds()
	if err := w.Close(); err != nil {
		return 0, 0, err
	}
	return float64(rec.releases.Load()) / el, float64(rec.lines.Load()) / el, nil
}

type counting struct {
	next            *history.Writer
	lines, releases atomic.Int64
}

func (c *counting) Append(op history.Op) (history.Op, error) {
	c.lines.Add(1)
	if op.F == history.FRelease && op.Type == history.OK {
		c.releases.Add(1)
	}
	return c.next.Append(op)
}

// rawLoop issues the statements of one lease cycle with plain gocql:
// INSERT IF NOT EXISTS, QUORUM read and write of the resource row, DELETE IF
// owner; one lock per goroutine; returns cycles per second.
func rawLoop(ctx context.Context, s *gocql.Session, ks, tag string, clients int, d time.Duration) (float64, error) {
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var n atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, clients)
	start := time.Now()
	for i := range clients {
		wg.Go(func() {
			name := fmt.Sprintf("raw-%s-%d", tag, i)
			owner := fmt.Sprintf("raw-%d", i)
			var elems []int64
			for e := int64(0); rctx.Err() == nil; e++ {
				if _, err := workload.LWT(s.Query(`INSERT INTO `+ks+`.leases (name, owner) VALUES (?, ?) IF NOT EXISTS USING TTL 3`,
					name, owner)).MapScanCASContext(rctx, map[string]any{}); err != nil {
					errs[i] = err
					return
				}
				var fence *int64
				err := s.Query(`SELECT elems, fence FROM `+ks+`.resource WHERE name = ?`, name).
					Consistency(gocql.Quorum).ScanContext(rctx, &elems, &fence)
				if err != nil && err != gocql.ErrNotFound {
					errs[i] = err
					return
				}
				elems = append(elems, e)
				if err := s.Query(`UPDATE `+ks+`.resource SET elems = ? WHERE name = ?`, elems, name).
					Consistency(gocql.Quorum).ExecContext(rctx); err != nil {
					errs[i] = err
					return
				}
				if _, err := workload.LWT(s.Query(`DELETE FROM `+ks+`.leases WHERE name = ? IF owner = ?`, name, owner)).
					MapScanCASContext(rctx, map[string]any{}); err != nil {
					errs[i] = err
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	for _, err := range errs {
		if err != nil && rctx.Err() == nil {
			return 0, err
		}
	}
	return float64(n.Load()) / el, nil
}

// runVs compares two clusters (the same shape, one on the lazy filesystem):
// each round runs every recipe on one, then on the other, for d each, and
// the sums give the ratio; alternating keeps a shared machine's drift out of
// it.
func runVs(a, b string, d time.Duration, rounds, clients int, recipes []string, log *slog.Logger) error {
	ctx := context.Background()
	var envs []runner.ClusterEnv
	for _, name := range []string{a, b} {
		c, err := cluster.Attach(ctx, cluster.WithName(name))
		if err != nil {
			return err
		}
		envs = append(envs, runner.ClusterEnv{Cluster: c})
	}
	sums := make([][2]float64, len(recipes))
	for i := range rounds {
		for j, name := range recipes {
			r, err := runner.LookupRecipe(name)
			if err != nil {
				return err
			}
			// Odd rounds run the second cluster first: a drift within a
			// round then favours neither.
			for _, k := range [][]int{{0, 1}, {1, 0}}[i%2] {
				env := envs[k]
				cycles, _, err := harness(ctx, env, r, clients, d, log)
				if err != nil {
					return fmt.Errorf("%s on %s: %w", name, []string{a, b}[k], err)
				}
				sums[j][k] += cycles
			}
			fmt.Fprintf(os.Stderr, "round %d %s: %s %.1f, %s %.1f cycles/s\n", i, name, a, sums[j][0]/float64(i+1), b, sums[j][1]/float64(i+1))
		}
	}
	fmt.Printf("| recipe (%d rounds of %v, alternating) | %s cycles/s | %s cycles/s | ratio |\n| --- | --- | --- | --- |\n", rounds, d, a, b)
	for j, name := range recipes {
		fmt.Printf("| %s | %.1f | %.1f | %.2f |\n", name, sums[j][0]/float64(rounds), sums[j][1]/float64(rounds), sums[j][1]/sums[j][0])
	}
	return nil
}
