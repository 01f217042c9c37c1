package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/httplock"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/runner"
)

// runRun is `lockcheck run`: a test on the cluster of `cluster up` (or one
// it starts), stored, checked and reported.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lock := fs.String("lock", "", "the lock recipe: "+fmt.Sprint(runner.RecipeNames()))
	lockCmd := fs.String("lock-cmd", "", "your lock as a plug-in command (sh -c), one process per client, JSON lines on stdin/stdout (README: Your own lock)")
	lockURL := fs.String("lock-url", "", "your REST lock service, http://HOST:PORT, with seed 004's contract (README: Your own lock)")
	promise := fs.String("promise", "mutex", "with --lock-cmd or --lock-url: what the lock promises, mutex or fenced (its grants carry tokens the resource checks)")
	nem := fs.String("nemesis", "none", "none, all, or a comma list of "+fmt.Sprint(nemesis.Kinds))
	nodes := fs.Int("nodes", 3, "nodes of the cluster to start (1..5; a running cluster is reused as it is)")
	clients := fs.Int("clients", 5, "concurrent clients")
	locks := fs.Int("locks", 1, "lock names the clients contend for (1..3 in the matrix)")
	dur := fs.Duration("time", 60*time.Second, "how long the clients and the nemesis run")
	seed := fs.Int64("seed", 0, "seed of every random choice (default: from the clock, printed)")
	store := fs.String("store", "store", "the store of runs")
	clusterName := fs.String("cluster", "lockcheck", "name of the cluster to use (lockcheck cluster up --name) or start")
	keep := fs.Bool("keep", false, "leave a cluster this command started running")
	paxos := fs.String("paxos", "v1", "paxos_variant of a cluster this command starts: v1 or v2")
	interval := fs.Duration("interval", 10*time.Second, "mean time between faults, and mean fault length")
	ttl := fs.Duration("ttl", 3*time.Second, "TTL of the lease recipes")
	quiet := fs.Duration("quiet", 5*time.Second, "quiet phase after healing, before the final reads")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lockcheck run --lock NAME|--lock-cmd COMMAND|--lock-url URL [--nemesis LIST] [--nodes N] [--clients C] [--time D] [--seed S] [--store DIR] [--keep] [--paxos v1|v2]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitValid
		}
		return exitError
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "lockcheck run: "+format+"\n", a...)
		return exitError
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	var recipe runner.Recipe
	var urlLock *httplock.Driver
	switch given := btoi(*lock != "") + btoi(*lockCmd != "") + btoi(*lockURL != ""); {
	case given == 0:
		return bad("--lock (one of %v), --lock-cmd or --lock-url is required", runner.RecipeNames())
	case given > 1:
		return bad("give one of --lock, --lock-cmd and --lock-url, not %d", given)
	case *promise != string(history.PromiseMutex) && *promise != string(history.PromiseFenced):
		return bad("--promise must be mutex or fenced, got %q", *promise)
	case *lockCmd != "":
		recipe = runner.CmdRecipe(*lockCmd, history.Promise(*promise))
		*lock = "plugin"
	case *lockURL != "":
		d, err := httplock.New(*lockURL)
		if err != nil {
			return bad("--lock-url: %v", err)
		}
		urlLock = d
		recipe = runner.URLRecipe(*lockURL, history.Promise(*promise))
		*lock = "http"
	default:
		r, err := runner.LookupRecipe(*lock)
		if err != nil {
			return bad("%v", err)
		}
		recipe = r
	}
	kinds, err := nemesis.ParseKinds(*nem)
	if err != nil {
		return bad("%v", err)
	}
	switch {
	case *nodes < 1 || *nodes > 5:
		return bad("--nodes must be 1..5, got %d", *nodes)
	case *clients < 1 || *clients > 100:
		return bad("--clients must be 1..100, got %d", *clients)
	case *locks < 1 || *locks > 100:
		return bad("--locks must be 1..100, got %d", *locks)
	case *dur <= 0:
		return bad("--time must be positive, got %v", *dur)
	case *paxos != "v1" && *paxos != "v2":
		return bad("--paxos must be v1 or v2, got %q", *paxos)
	case *interval <= 0 || *ttl < time.Second || *quiet < 0:
		return bad("--interval must be positive, --ttl at least 1s, --quiet not negative")
	}
	if urlLock != nil {
		// Before any cluster starts: a service that does not answer is bad input.
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := urlLock.Check(cctx)
		cancel()
		urlLock.Close()
		if err != nil {
			return bad("--lock-url: %v", err)
		}
	}
	if *seed == 0 {
		*seed = time.Now().UnixNano() % 1_000_000_000
	}
	log := slog.Default()

	c, started, err := runner.AttachOrStart(ctx, cluster.WithName(*clusterName), cluster.WithNodes(*nodes), cluster.WithPaxos(*paxos), cluster.WithLogger(log))
	if err != nil {
		fmt.Fprintf(stderr, "lockcheck run: cluster: %v\n", err)
		return exitError
	}
	if started {
		fmt.Fprintf(stderr, "lockcheck run: started a %d-node cluster\n", len(c.Nodes()))
	} else {
		fmt.Fprintf(stderr, "lockcheck run: using the running cluster (%d nodes, paxos %s)\n", len(c.Nodes()), c.Paxos())
	}
	defer func() {
		if started && !*keep {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer cancel()
			if err := c.Stop(sctx, ""); err != nil {
				fmt.Fprintf(stderr, "lockcheck run: stop cluster: %v\n", err)
			}
		}
	}()
	fmt.Fprintf(stderr, "lockcheck run: %s under %s for %v, seed %d\n", *lock, *nem, *dur, *seed)
	out, err := runner.Run(ctx, runner.ClusterEnv{Cluster: c}, runner.ReportStore{}, runner.Test{
		Recipe: recipe, Nemesis: kinds, Nodes: len(c.Nodes()), Clients: *clients, Locks: *locks,
		Time: *dur, Seed: *seed, Store: *store, Paxos: c.Paxos(), Interval: *interval, TTL: *ttl,
		Quiet: *quiet, Progress: stderr, Log: log,
	})
	if se := (*runner.SetupError)(nil); errors.As(err, &se) {
		fmt.Fprintf(stderr, "lockcheck run: %v (log: %s)\n", err, filepath.Join(out.Dir, "lockcheck.log"))
		return exitError
	}
	if err != nil {
		fmt.Fprintf(stderr, "lockcheck run: %v\n", err)
	}
	if out.Dir == "" || out.Verdict == "" {
		return exitError
	}
	fmt.Fprintf(stdout, "verdict: %s\n", out.Verdict)
	for i, a := range out.Result.Anomalies {
		if i == 5 {
			fmt.Fprintf(stdout, "  ... %d more in the report\n", len(out.Result.Anomalies)-i)
			break
		}
		fmt.Fprintf(stdout, "  %s on %s: %s\n", a.Kind, a.Lock, a.Message)
	}
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(out.Dir, "report.html"))
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "lockcheck run: interrupted; checked what ran")
	}
	switch {
	case out.Verdict == checker.Invalid:
		return exitInvalid
	case err != nil:
		// A run that broke (a heal that failed, an unreadable history)
		// cannot vouch for a valid verdict.
		return exitError
	case out.Verdict == checker.Valid:
		return exitValid
	}
	return exitUnknown
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
