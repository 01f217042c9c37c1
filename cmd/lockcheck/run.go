package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/lockcheck/lockcheck"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/spec"
	"github.com/lockcheck/lockcheck/sshnode"
	"github.com/lockcheck/lockcheck/workload"
)

// runFlags are `lockcheck run`'s flags: the run's settings (the Spec's
// flags, spec.Register), the lock, the cluster or hosts. What they fill
// becomes a lockcheck.Lock and lockcheck.Options (options), and the run goes
// through the Go API's entry point, lockcheck.Plan.Run.
type runFlags struct {
	lock, lockCmd, lockURL, promise string
	schedule                        string
	name                            string
	cluster, paxos, version, hosts  string
	nodes                           int
	keep                            bool
	t                               runner.Test
	x                               runner.External
	ssh                             sshnode.Config
}

func newRunFlags() (*flag.FlagSet, *runFlags) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	f := &runFlags{t: runner.Defaults()}
	t := &f.t
	fs.StringVar(&f.lock, "lock", "", "the lock recipe: "+fmt.Sprint(runner.RecipeNames()))
	fs.StringVar(&f.lockCmd, "lock-cmd", "", "your lock as a plug-in command (sh -c), one process per client, JSON lines on stdin/stdout (docs: your own lock)")
	fs.StringVar(&f.lockURL, "lock-url", "", "your REST lock service, http://HOST:PORT, with seed 004's contract (docs: your own lock)")
	fs.StringVar(&f.name, "name", "", "with --lock-cmd or --lock-url: the lock's name in the store and the report, lower-case words joined by dashes (default: --lock-cmd's program's base name, or its lock argument: python-lease for plugins/python-lease/run, shedlock for plugins/java-locks/run shedlock; http)")
	fs.StringVar(&f.promise, "promise", "mutex", "with --lock-cmd or --lock-url: what the lock promises, mutex or fenced (its grants carry tokens the resource checks)")
	fs.StringVar(&f.schedule, "schedule", "", "deal this schedule file's faults (kinds, offsets, windows, nodes, parameters) instead of drawing them: written by replay and shrink, editable (a step may follow an earlier window: the run then lasts until it is dealt, as it does when a step is a range movement); not with --nemesis")
	fs.IntVar(&f.nodes, "nodes", cluster.DefaultNodes, fmt.Sprintf("nodes of the cluster to start (1..%d; a running cluster is reused as it is)", cluster.MaxNodes))
	fs.StringVar(&f.paxos, "paxos", cluster.DefaultPaxos, "paxos_variant of a cluster this command starts: v1 or v2 (v2: 4.1 and later), or a known-unsafe control (cluster up --help)")
	fs.StringVar(&f.version, "version", cluster.DefaultVersion, "Cassandra version of a cluster this command starts: "+cluster.VersionsHelp())
	fs.StringVar(&f.cluster, "cluster", cluster.DefaultName, "name of the cluster to use (lockcheck cluster up --cluster) or start")
	fs.BoolVar(&f.keep, "keep", false, "leave a cluster this command started running")
	// The run's settings are the Spec's fields: their flags, defaults and
	// help come from its table (spec.Fields), with the lists only other
	// packages know added here.
	spec.Register(fs, &t.Spec, map[string]string{
		"nemesis":  ": " + strings.Join(nemesis.Kinds, ", "),
		"dc-local": "; the recipes that take it: " + strings.Join(runner.DCLocalRecipes(), ", "),
	})
	fs.StringVar(&f.hosts, "hosts", "", "your own Cassandra: contact points H1,H2,... (no Docker; node faults need --ssh-key)")
	x := &f.x
	fs.IntVar(&x.Port, "port", 9042, "with --hosts: CQL port")
	fs.StringVar(&x.Keyspace, "keyspace", cluster.DefaultKeyspace, "with --hosts: the keyspace lockcheck creates its tables in (created if missing)")
	fs.IntVar(&x.RF, "rf", 0, "with --hosts: replication factor of a keyspace lockcheck creates (default: hosts, at most 3)")
	fs.StringVar(&x.DC, "dc", "", "with --hosts: the local data centre (the keyspace is created with NetworkTopologyStrategy in it)")
	ssh := &f.ssh
	fs.StringVar(&ssh.KeyFile, "ssh-key", "", "with --hosts: private key for SSH to every host (node faults)")
	fs.StringVar(&ssh.User, "ssh-user", "root", "with --hosts: SSH user (not root: commands run with sudo -n)")
	fs.IntVar(&ssh.Port, "ssh-port", 22, "with --hosts: SSH port")
	fs.StringVar(&ssh.KnownHosts, "ssh-known-hosts", "", "with --hosts: known_hosts file host keys are checked against (default ~/.ssh/known_hosts)")
	fs.BoolVar(&ssh.InsecureIgnoreHostKey, "ssh-insecure-ignore-host-key", false, "with --hosts: do not check host keys")
	fs.StringVar(&ssh.StartCmd, "ssh-start-cmd", "", "with --hosts: starts Cassandra after a kill, e.g. \"systemctl start cassandra\" (kill needs it)")
	fs.BoolVar(&ssh.ClockStep, "ssh-clock-step", false, "with --hosts: clock faults step the host's real clock when the JVM has no libfaketime (the docs: the risk)")
	return fs, f
}

const runUsage = `usage: lockcheck run --lock NAME|--lock-cmd COMMAND|--lock-url URL|--workload register [--name NAME] [--nemesis LIST|--schedule FILE] [--nodes N] [--clients C] [--time D] [--seed S] [--store DIR] [--keep] [--version 4.0|4.1|5.0|4.1.5] [--paxos v1|v2] [--workload cycle|leader|register] [--pin-clients] [--dc-local] [--retire-stuck] [--no-wait]
       [--hosts H1,H2,H3 [--port 9042] [--keyspace KS] [--rf N] [--dc DC] [--ssh-key FILE [--ssh-user U] [--ssh-port 22] [--ssh-start-cmd CMD] [--ssh-clock-step]]]`

// options turns the flags into the Go API's lock and options.
func (f *runFlags) options() (lockcheck.Lock, []lockcheck.Option, error) {
	switch given := btoi(f.lock != "") + btoi(f.lockCmd != "") + btoi(f.lockURL != ""); {
	case f.t.Workload == workload.ShapeRegister && given > 0:
		return lockcheck.Lock{}, nil, errors.New("--workload register tests Cassandra's LWT itself: give no --lock, --lock-cmd or --lock-url")
	case f.t.Workload == workload.ShapeRegister:
	case given == 0:
		return lockcheck.Lock{}, nil, fmt.Errorf("--lock (one of %v), --lock-cmd or --lock-url is required", runner.RecipeNames())
	case given > 1:
		return lockcheck.Lock{}, nil, fmt.Errorf("give one of --lock, --lock-cmd and --lock-url, not %d", given)
	case f.name != "" && f.lock != "":
		return lockcheck.Lock{}, nil, errors.New("--name names a --lock-cmd or --lock-url lock (a --lock recipe keeps its own name)")
	case f.promise != string(lockcheck.Mutex) && f.promise != string(lockcheck.Fenced):
		return lockcheck.Lock{}, nil, fmt.Errorf("--promise must be mutex or fenced, got %q", f.promise)
	}
	lock := lockcheck.Lock{Recipe: f.lock, Command: f.lockCmd, URL: f.lockURL, Name: f.name}
	if f.lock == "" && f.t.Workload != workload.ShapeRegister {
		lock.Promise = history.Promise(f.promise)
	}
	opts := []lockcheck.Option{
		lockcheck.WithSpec(f.t.Spec), lockcheck.WithCluster(f.cluster),
		lockcheck.WithStartIfMissing(f.nodes, f.paxos), lockcheck.WithCassandra(f.version),
	}
	if f.schedule != "" {
		if len(f.t.Nemesis) > 0 {
			return lockcheck.Lock{}, nil, errors.New("give --schedule or --nemesis, not both (the schedule names its kinds)")
		}
		s, err := nemesis.LoadSchedule(f.schedule)
		if err != nil {
			return lockcheck.Lock{}, nil, err
		}
		opts = append(opts, lockcheck.WithSchedule(s))
	}
	if f.keep {
		opts = append(opts, lockcheck.WithKeep())
	}
	if f.hosts != "" {
		x := f.x
		for h := range strings.SplitSeq(f.hosts, ",") {
			x.Hosts = append(x.Hosts, strings.TrimSpace(h))
		}
		if f.ssh.KeyFile != "" {
			ssh := f.ssh
			x.SSH = &ssh
		}
		opts = append(opts, lockcheck.WithHosts(x))
	}
	return lock, opts, nil
}

// runRun is `lockcheck run`: a test on the cluster of `cluster up` (or one
// it starts, or the user's hosts), stored, checked and reported.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, f := newRunFlags()
	withUsage(fs, stderr, runUsage)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitValid
		}
		return exitError
	}
	bad := func(err error) int {
		msg := strings.TrimPrefix(err.Error(), "lockcheck: ")
		fmt.Fprintf(stderr, "lockcheck run: %s\n", strings.ReplaceAll(msg, "\n", "; "))
		return exitError
	}
	if fs.NArg() > 0 {
		return bad(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	lock, opts, err := f.options()
	if err != nil {
		return bad(err)
	}
	plan, err := lockcheck.NewPlan(lock, append(opts, lockcheck.WithProgress(stderr))...)
	if err != nil {
		return bad(err)
	}
	res, err := plan.Run(ctx)
	if se := (*runner.SetupError)(nil); errors.As(err, &se) {
		fmt.Fprintf(stderr, "lockcheck run: %v (log: %s)\n", se, filepath.Join(res.Dir, "lockcheck.log"))
		return exitError
	}
	if err != nil && res.Dir == "" {
		return bad(err)
	}
	if se := (*runner.StoreError)(nil); errors.As(err, &se) {
		return bad(se)
	}
	return printResult(ctx, res, err, stdout, stderr)
}

// printResult prints a run's verdict and returns the exit code.
func printResult(ctx context.Context, res lockcheck.Result, err error, stdout, stderr io.Writer) int {
	if err != nil {
		fmt.Fprintf(stderr, "lockcheck run: %v\n", strings.TrimPrefix(err.Error(), "lockcheck: "))
	}
	if res.Verdict == "" {
		return exitError
	}
	fmt.Fprintf(stdout, "verdict: %s\n", res.Verdict)
	for i, a := range res.Check.Anomalies {
		if i == 5 {
			fmt.Fprintf(stdout, "  ... %d more in the report\n", len(res.Check.Anomalies)-i)
			break
		}
		fmt.Fprintf(stdout, "  %s on %s: %s\n", a.Kind, a.Lock, a.Message)
	}
	fmt.Fprintf(stdout, "report: %s\n", res.Report)
	if len(res.NeverDealt) > 0 {
		fmt.Fprintf(stderr, "lockcheck run: requested and never dealt: %s (the run ended before their turn, or their starts failed: a longer --time or a shorter --nemesis list deals them)\n",
			strings.Join(res.NeverDealt, ", "))
	}
	for _, f := range res.Check.LeftWaiting() {
		fmt.Fprintf(stderr, "lockcheck run: lock %s held for good from %.1fs, so tested little from then on: its holder's process ended holding a grant with no lease in the history (run --retire-stuck moves the clients to a fresh lock name)\n",
			f.Lock, float64(f.Start)/1e9)
	}
	if res.Phases.TotalMS > 0 {
		fmt.Fprintf(stderr, "lockcheck run: %s\n", res.Phases)
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "lockcheck run: interrupted; checked what ran")
	}
	switch {
	case res.Verdict == checker.Invalid:
		return exitInvalid
	case err != nil:
		// A run that broke (a heal that failed, an unreadable history)
		// cannot vouch for a valid verdict.
		return exitError
	case res.Verdict == checker.Valid:
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
