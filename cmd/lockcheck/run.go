package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/httplock"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/sshnode"
	"github.com/lockcheck/lockcheck/workload"
)

// runRun is `lockcheck run`: a test on the cluster of `cluster up` (or one
// it starts), stored, checked and reported.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	t := runner.Defaults()
	lock := fs.String("lock", "", "the lock recipe: "+fmt.Sprint(runner.RecipeNames()))
	lockCmd := fs.String("lock-cmd", "", "your lock as a plug-in command (sh -c), one process per client, JSON lines on stdin/stdout (README: Your own lock)")
	lockURL := fs.String("lock-url", "", "your REST lock service, http://HOST:PORT, with seed 004's contract (README: Your own lock)")
	promise := fs.String("promise", "mutex", "with --lock-cmd or --lock-url: what the lock promises, mutex or fenced (its grants carry tokens the resource checks)")
	nem := fs.String("nemesis", "none", "none, all (every kind but the power kinds, which need a cluster up --lazyfs, and the coord kinds, which need --pin-clients), or a comma list of "+fmt.Sprint(nemesis.Kinds))
	nodes := fs.Int("nodes", cluster.DefaultNodes, fmt.Sprintf("nodes of the cluster to start (1..%d; a running cluster is reused as it is)", cluster.MaxNodes))
	paxos := fs.String("paxos", cluster.DefaultPaxos, "paxos_variant of a cluster this command starts: v1 or v2")
	clusterName := fs.String("cluster", cluster.DefaultName, "name of the cluster to use (lockcheck cluster up --cluster) or start")
	keep := fs.Bool("keep", false, "leave a cluster this command started running")
	fs.StringVar(&t.Workload, "workload", t.Workload, fmt.Sprintf("the clients' shape: %s (acquire, write, release) or %s (terms of many seconds, heartbeats, writes as leader)", workload.ShapeCycle, workload.ShapeLeader))
	fs.IntVar(&t.Clients, "clients", t.Clients, fmt.Sprintf("concurrent clients (1..%d)", runner.MaxClients))
	fs.IntVar(&t.Locks, "locks", t.Locks, fmt.Sprintf("lock names the clients contend for (1..%d)", runner.MaxLocks))
	fs.DurationVar(&t.Time, "time", t.Time, "how long the clients and the nemesis run")
	fs.Int64Var(&t.Seed, "seed", 0, "seed of every random choice (default: from the clock, printed)")
	fs.StringVar(&t.Store, "store", t.Store, "the store of runs")
	fs.DurationVar(&t.Interval, "interval", t.Interval, "mean time between faults, and mean fault length")
	fs.DurationVar(&t.TTL, "ttl", t.TTL, "TTL of the lease recipes (at least 1s)")
	fs.DurationVar(&t.Quiet, "quiet", t.Quiet, "quiet phase after healing, before the final reads (0: none)")
	fs.DurationVar(&t.PauseExtra, "pause-extra", t.PauseExtra, "client-pause: how much longer than its lease a paused holder stalls")
	fs.BoolVar(&t.PinClients, "pin-clients", false, "send client i's queries through node i mod nodes alone (not the token-aware replica all share); the coord-* faults need it")
	hosts := fs.String("hosts", "", "your own Cassandra: contact points H1,H2,... (no Docker; node faults need --ssh-key)")
	x := runner.External{}
	fs.IntVar(&x.Port, "port", 9042, "with --hosts: CQL port")
	fs.StringVar(&x.Keyspace, "keyspace", cluster.DefaultKeyspace, "with --hosts: the keyspace lockcheck creates its tables in (created if missing)")
	fs.IntVar(&x.RF, "rf", 0, "with --hosts: replication factor of a keyspace lockcheck creates (default: hosts, at most 3)")
	fs.StringVar(&x.DC, "dc", "", "with --hosts: the local data centre (the keyspace is created with NetworkTopologyStrategy in it)")
	ssh := sshnode.Config{}
	fs.StringVar(&ssh.KeyFile, "ssh-key", "", "with --hosts: private key for SSH to every host (node faults)")
	fs.StringVar(&ssh.User, "ssh-user", "root", "with --hosts: SSH user (not root: commands run with sudo -n)")
	fs.IntVar(&ssh.Port, "ssh-port", 22, "with --hosts: SSH port")
	fs.StringVar(&ssh.KnownHosts, "ssh-known-hosts", "", "with --hosts: known_hosts file host keys are checked against (default ~/.ssh/known_hosts)")
	fs.BoolVar(&ssh.InsecureIgnoreHostKey, "ssh-insecure-ignore-host-key", false, "with --hosts: do not check host keys")
	fs.StringVar(&ssh.StartCmd, "ssh-start-cmd", "", "with --hosts: starts Cassandra after a kill, e.g. \"systemctl start cassandra\" (kill needs it)")
	fs.BoolVar(&ssh.ClockStep, "ssh-clock-step", false, "with --hosts: clock faults step the host's real clock when the JVM has no libfaketime (README: the risk)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lockcheck run --lock NAME|--lock-cmd COMMAND|--lock-url URL [--nemesis LIST] [--nodes N] [--clients C] [--time D] [--seed S] [--store DIR] [--keep] [--paxos v1|v2] [--workload cycle|leader] [--pin-clients]")
		fmt.Fprintln(stderr, "       [--hosts H1,H2,H3 [--port 9042] [--keyspace KS] [--rf N] [--dc DC] [--ssh-key FILE [--ssh-user U] [--ssh-port 22] [--ssh-start-cmd CMD] [--ssh-clock-step]]]")
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
	var err error
	var urlLock *httplock.Driver
	switch given := btoi(*lock != "") + btoi(*lockCmd != "") + btoi(*lockURL != ""); {
	case given == 0:
		return bad("--lock (one of %v), --lock-cmd or --lock-url is required", runner.RecipeNames())
	case given > 1:
		return bad("give one of --lock, --lock-cmd and --lock-url, not %d", given)
	case *promise != string(history.PromiseMutex) && *promise != string(history.PromiseFenced):
		return bad("--promise must be mutex or fenced, got %q", *promise)
	case *lockCmd != "":
		t.Recipe, *lock = runner.CmdRecipe(*lockCmd, history.Promise(*promise)), "plugin"
	case *lockURL != "":
		if urlLock, err = httplock.New(*lockURL); err != nil {
			return bad("--lock-url: %v", err)
		}
		t.Recipe, *lock = runner.URLRecipe(*lockURL, history.Promise(*promise)), "http"
	default:
		if t.Recipe, err = runner.LookupRecipe(*lock); err != nil {
			return bad("%v", err)
		}
	}
	if t.Nemesis, err = nemesis.ParseKinds(*nem); err != nil {
		return bad("%v", err)
	}
	switch {
	case *nodes < 1 || *nodes > cluster.MaxNodes:
		return bad("--nodes must be 1..%d, got %d", cluster.MaxNodes, *nodes)
	case *paxos != "v1" && *paxos != "v2":
		return bad("--paxos must be v1 or v2, got %q", *paxos)
	}
	if err := t.Validate(); err != nil {
		return bad("%v", strings.ReplaceAll(err.Error(), "\n", "; "))
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
	if t.Seed == 0 {
		t.Seed = time.Now().UnixNano() % 1_000_000_000
	}
	log := slog.Default()
	if *hosts != "" {
		for h := range strings.SplitSeq(*hosts, ",") {
			x.Hosts = append(x.Hosts, strings.TrimSpace(h))
		}
		if ssh.KeyFile != "" {
			x.SSH = &ssh
		}
		x.Log = log
		if err := x.Validate(); err != nil {
			return bad("%v", err)
		}
		octx, cancel := context.WithTimeout(ctx, time.Minute)
		env, err := runner.OpenExternal(octx, x, t.Nemesis)
		cancel()
		if err != nil {
			return bad("%v", strings.ReplaceAll(err.Error(), "\n", "; "))
		}
		defer env.Close()
		access := "no node access: client faults only"
		if x.SSH != nil {
			access = "node faults over SSH as " + ssh.User
		}
		fmt.Fprintf(stderr, "lockcheck run: using your cluster %s (keyspace %s, %s)\n", *hosts, x.Keyspace, access)
		return runOn(ctx, env, t, *lock, *nem, stdout, stderr, log)
	}

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
	return runOn(ctx, runner.ClusterEnv{Cluster: c}, t, *lock, *nem, stdout, stderr, log)
}

// runOn runs t on env and prints its verdict; it returns the exit code.
func runOn(ctx context.Context, env runner.Env, t runner.Test, lock, nem string, stdout, stderr io.Writer, log *slog.Logger) int {
	fmt.Fprintf(stderr, "lockcheck run: %s under %s for %v, seed %d\n", lock, nem, t.Time, t.Seed)
	t.Progress, t.Log = stderr, log
	out, err := runner.Run(ctx, env, runner.ReportStore{}, t)
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
	if out.Phases.TotalMS > 0 {
		fmt.Fprintf(stderr, "lockcheck run: %s\n", out.Phases)
	}
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
