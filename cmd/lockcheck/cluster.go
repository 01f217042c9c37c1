package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/exclusive"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/runner"
)

const clusterUsage = `usage: lockcheck cluster COMMAND [flags]
  up      start a Cassandra cluster and leave it running for later commands
          [--name lockcheck] [--nodes 3] [--version 4.0|4.1|5.0|4.1.5] [--paxos v1|v2] [--commitlog-sync periodic|batch]
          [--heap 512M] [--rf N] [--image REF] [--subnet CIDR] [--ssh-authorized-key FILE.pub] [--timeout 4m]
          [--lazyfs]  (data on a filesystem that loses unsynced writes on power-loss faults)
          [--dcs N] [--spares N] [--skip-paxos-repair] [--paxos-state-purging legacy|gc_grace|repaired]  (two data centres; stopped spares for join, leave, replace, remove)
          [--paxos-upgrade]  (Paxos v1 that a paxos-upgrade fault switches to v2; each run starts on v1 again)
          [--accord full|mixed_reads]  (6.0-alpha: Accord on, the tables' LWTs run as Accord transactions)
          [--accord-stop-marker EXIT|ALLOW_UNSAFE_STARTUP|REBOOTSTRAP]  (what a killed node does at its next start; EXIT: it does not start)
  status  print a line per node: name, IP, state (UN/DN), Cassandra version, faults, and who holds the cluster  [--name lockcheck]
  heal    take the cluster, heal what killed runs left, wait until healthy  [--name lockcheck] [--force] [--no-wait]
          (--force: also remove state lockcheck did not make, every iptables rule: the nodes are lockcheck's own)
  down    take the cluster, remove its containers and network               [--name lockcheck] [--no-wait]
  image   build the node image if missing and print its tag               [--version 5.0]`

// runCluster is `lockcheck cluster up|status|down|image`.
func runCluster(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, clusterUsage)
		return exitError
	}
	sub, args := args[0], args[1:]
	var run func(context.Context, []string, io.Writer) error
	switch sub {
	case "up":
		run = clusterUp
	case "status":
		run = clusterStatus
	case "down":
		run = clusterDown
	case "heal":
		run = clusterHeal
	case "image":
		run = clusterImage
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, clusterUsage)
		return exitValid
	default:
		fmt.Fprintf(stderr, "lockcheck cluster: unknown command %q (want up, status, heal, down or image)\n", sub)
		return exitError
	}
	if err := run(ctx, args, stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, clusterUsage)
			return exitValid
		}
		fmt.Fprintf(stderr, "lockcheck cluster %s: %s\n", sub, oneLine(err.Error()))
		return exitError
	}
	return exitValid
}

// oneLine flattens a multi-line error (a node's last log lines) to one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// newFlags makes a flag set that reports errors to its caller instead of
// printing usage, so bad input gets one line.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// upFlags are `lockcheck cluster up`'s flags.
type upFlags struct {
	name, version, paxos, sync, heap, image, subnet, sshKey, purging, accord, accordStop string
	nodes, rf, dcs, spares                                                               int
	lazy, skipRepair, upgrade                                                            bool
	timeout                                                                              time.Duration
}

func newUpFlags() (*flag.FlagSet, *upFlags) {
	fs := newFlags("up")
	f := &upFlags{}
	nameFlag(fs, &f.name)
	fs.IntVar(&f.nodes, "nodes", cluster.DefaultNodes, "number of nodes, 1 to 5")
	fs.StringVar(&f.version, "version", cluster.DefaultVersion, "Cassandra version: "+cluster.VersionsHelp())
	fs.StringVar(&f.paxos, "paxos", cluster.DefaultPaxos, "paxos_variant: v1 or v2 (v2: 4.1 and later); known-unsafe controls (CASSANDRA-12126's fix off): v1_without_linearizable_reads_or_rejected_writes, v2_without_linearizable_reads[_or_rejected_writes] (4.1 and later), v1_without_linearizable_reads (4.0: -Dcassandra.unsafe.disable-serial-reads-linearizability=true)")
	fs.StringVar(&f.sync, "commitlog-sync", "periodic", "commitlog_sync: periodic or batch")
	fs.StringVar(&f.heap, "heap", cluster.DefaultHeap, "JVM heap per node")
	fs.IntVar(&f.rf, "rf", 0, "replication factor of the lockcheck keyspace (default: number of nodes); with --dcs, in each data centre (default: every node of each, 3 and 2 for --nodes 5)")
	fs.IntVar(&f.dcs, "dcs", 1, "data centres dc1..dcN, the nodes split in order, at least 2 nodes each (GossipingPropertyFileSnitch, NetworkTopologyStrategy)")
	fs.IntVar(&f.spares, "spares", 0, fmt.Sprintf("spare nodes (0 to %d) created outside the ring, stopped, for the membership faults (join, leave, replace, remove)", cluster.MaxSpares))
	fs.StringVar(&f.purging, "paxos-state-purging", "", "4.1 and later: paxos_state_purging, one of "+strings.Join(cluster.PaxosStatePurgings, ", ")+" (default: the release's, legacy)")
	fs.BoolVar(&f.upgrade, "paxos-upgrade", false, "4.1 and later, --paxos v1: let the paxos-upgrade fault switch the nodes to Paxos v2 during a run (the next run's heal switches them back, recorded)")
	fs.StringVar(&f.accord, "accord", "", "6.0-alpha: Accord on, with this default transactional_mode for every table ("+strings.Join(cluster.AccordModes, ", ")+"): LWTs run as Accord transactions, not Paxos (default: off)")
	fs.StringVar(&f.accordStop, "accord-stop-marker", "", "with --accord: accord.journal.stop_marker_failure_policy, what a node whose Accord journal was not stopped cleanly (a kill) does at start: "+strings.Join(cluster.AccordStopMarkerPolicies, ", ")+" (default: the release's, EXIT: it does not start)")
	fs.BoolVar(&f.skipRepair, "skip-paxos-repair", false, "Paxos v2: skip_paxos_repair_on_topology_change (topology changes complete without Paxos repair)")
	fs.StringVar(&f.image, "image", "", "run this local image instead of building lockcheck's own")
	fs.StringVar(&f.subnet, "subnet", "", "IPv4 subnet of the cluster network (default derived from the name)")
	fs.StringVar(&f.sshKey, "ssh-authorized-key", "", "public key file: run sshd in every node, root login with this key (for --hosts --ssh-*)")
	fs.DurationVar(&f.timeout, "timeout", 0, "how long to wait for the cluster to become healthy (default 4m; a loaded machine, or 4.x's slower start, may need more)")
	fs.BoolVar(&f.lazy, "lazyfs", false, "keep every node's data on lockcheck-lazyfs, which loses unsynced writes when a power-loss fault cuts the node")
	return fs, f
}

// nameFlag defines --name and its synonym --cluster (what run and lockd
// call the same idea) into name.
func nameFlag(fs *flag.FlagSet, name *string) {
	fs.StringVar(name, "name", cluster.DefaultName, "cluster name")
	fs.StringVar(name, "cluster", cluster.DefaultName, "cluster name (same as --name)")
}

// newNameFlags is the flag set of the subcommands that take only the
// cluster's name (status, down).
func newNameFlags(sub string) (*flag.FlagSet, *string) {
	fs := newFlags(sub)
	name := new(string)
	nameFlag(fs, name)
	return fs, name
}

func clusterUp(ctx context.Context, args []string, stdout io.Writer) error {
	fs, f := newUpFlags()
	if err := parse(fs, args); err != nil {
		return err
	}
	opts := []cluster.Option{
		cluster.WithName(f.name), cluster.WithNodes(f.nodes), cluster.WithVersion(f.version), cluster.WithPaxos(f.paxos),
		cluster.WithCommitlogSync(f.sync), cluster.WithHeap(f.heap), cluster.WithReplicationFactor(f.rf), cluster.WithDCs(f.dcs),
		cluster.WithSpares(f.spares), cluster.WithSkipPaxosRepair(f.skipRepair), cluster.WithPaxosStatePurging(f.purging),
		cluster.WithAccord(f.accord), cluster.WithAccordStopMarker(f.accordStop),
	}
	if f.image != "" {
		opts = append(opts, cluster.WithImage(f.image))
	}
	if f.upgrade {
		opts = append(opts, cluster.WithPaxosUpgrade())
	}
	if f.subnet != "" {
		opts = append(opts, cluster.WithSubnet(f.subnet))
	}
	if f.sshKey != "" {
		b, err := os.ReadFile(f.sshKey)
		if err != nil {
			return fmt.Errorf("%w: --ssh-authorized-key: %w", cluster.ErrBadOption, err)
		}
		opts = append(opts, cluster.WithSSHKey(string(b)))
	}
	if f.lazy {
		bin, err := lazyFSBinary()
		if err != nil {
			return err
		}
		opts = append(opts, cluster.WithLazyFS(bin))
	}
	// Bad input is rejected before anything touches Docker.
	if err := cluster.ValidateOptions(opts...); err != nil {
		return err
	}
	if f.timeout < 0 {
		return fmt.Errorf("%w: --timeout must not be negative, got %v", cluster.ErrBadOption, f.timeout)
	}
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	log := slog.Default()
	// A cluster of this name already running is kept when it matches the
	// flags (other processes may be using it), never silently replaced.
	if c, err := cluster.Attach(ctx, cluster.WithName(f.name), cluster.WithLogger(log)); err == nil {
		v, _ := cluster.LookupVersion(f.version) // validated above
		want := fmt.Sprintf("%d nodes, %d spares, %d DCs, Cassandra %s, paxos %s (skip repair %t, state purging %q, upgrade %t), accord %q (stop marker %q), commitlog %s, lazyfs %t", f.nodes, f.spares, max(f.dcs, 1), v.Cassandra, f.paxos, f.skipRepair, f.purging, f.upgrade, f.accord, f.accordStop, f.sync, f.lazy)
		have := fmt.Sprintf("%d nodes, %d spares, %d DCs, Cassandra %s, paxos %s (skip repair %t, state purging %q, upgrade %t), accord %q (stop marker %q), commitlog %s, lazyfs %t", len(c.Nodes()), len(c.Spares()), len(c.DCs()), c.Version().Cassandra, c.Paxos(), c.SkipPaxosRepair(), c.PaxosStatePurging(), c.PaxosUpgrade(), c.Accord(), c.AccordStopMarker(), c.CommitlogSync(), c.LazyFS())
		if want != have || (f.image != "" && f.image != c.Image()) {
			return fmt.Errorf("cluster %q already runs with %s, image %s; run `lockcheck cluster down --name %s` first", f.name, have, c.Image(), f.name)
		}
		log.Info("cluster already running; healing leftovers, waiting until healthy", "cluster", f.name)
		if err := runner.HealLeftovers(ctx, runner.ClusterEnv{Cluster: c}, nil, log); err != nil {
			return err
		}
		return printStatus(ctx, c, stdout)
	} else if !errors.Is(err, cluster.ErrNotRunning) {
		return err
	}
	// The cluster's lease is held while it starts: a test or run waiting
	// for it (make test builds the tests' binaries while the nodes come up)
	// attaches to a whole cluster, never a half-started one.
	lease, err := take(ctx, f.name, false)
	if err != nil {
		return err
	}
	defer lease.Release()
	if c, err := cluster.Attach(ctx, cluster.WithName(f.name), cluster.WithLogger(log)); err == nil {
		// Started by another while this waited for the lease.
		return printStatus(ctx, c, stdout)
	}
	c, err := cluster.Start(ctx, append(opts, cluster.WithLogger(log))...)
	if err != nil {
		return err
	}
	lease.SetClean(true) // a new cluster: the next holder need not probe it
	return printStatus(ctx, c, stdout)
}

func clusterStatus(ctx context.Context, args []string, stdout io.Writer) error {
	fs, name := newNameFlags("status")
	if err := parse(fs, args); err != nil {
		return err
	}
	c, err := cluster.Attach(ctx, cluster.WithName(*name), cluster.WithLogger(slog.Default()))
	if err != nil {
		return err
	}
	if err := printStatus(ctx, c, stdout); err != nil {
		return err
	}
	h, held, err := exclusive.Local{Name: *name}.Holder(ctx)
	switch {
	case err != nil:
		fmt.Fprintf(stdout, "held by: unknown (%v)\n", err)
	case held:
		fmt.Fprintf(stdout, "held by: %s\n", h)
	default:
		fmt.Fprintln(stdout, "held by: nobody")
	}
	return nil
}

func printStatus(ctx context.Context, c *cluster.Cluster, stdout io.Writer) error {
	st, err := c.Status(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, s := range st {
		v := s.Version
		if v == "" {
			v = "-"
		}
		faults := "-"
		if len(s.Faults) > 0 {
			faults = strings.Join(s.Faults, ", ")
		}
		dc := s.DC
		if dc == "" {
			dc = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.IP, dc, s.State, v, s.Container, faults)
	}
	return tw.Flush()
}

// takeFlags is the flag set of the subcommands that take the cluster
// before they touch it (heal, down).
func takeFlags(sub string) (*flag.FlagSet, *string, *bool) {
	fs, name := newNameFlags(sub)
	noWait := fs.Bool("no-wait", false, "refuse (exit 2) when another process holds the cluster, instead of waiting")
	return fs, name, noWait
}

// newHealFlags is `lockcheck cluster heal`'s flag set.
func newHealFlags() (*flag.FlagSet, *string, *bool, *bool) {
	fs, name, noWait := takeFlags("heal")
	force := fs.Bool("force", false, "also remove what lockcheck did not make: every iptables rule and chain of every node (a cluster lockcheck made has no firewall of anyone's)")
	return fs, name, noWait, force
}

// take takes the cluster of that name, saying once on stderr whom it
// waits for.
func take(ctx context.Context, name string, noWait bool) (*exclusive.Lease, error) {
	return exclusive.Take(ctx, exclusive.Local{Name: name}, exclusive.NoWait(noWait),
		exclusive.Say(func(line string) { fmt.Fprintf(os.Stderr, "lockcheck cluster: %s\n", line) }))
}

func clusterDown(ctx context.Context, args []string, stdout io.Writer) error {
	fs, name, noWait := takeFlags("down")
	if err := parse(fs, args); err != nil {
		return err
	}
	// Never from under a run: it would lose its history's end and its heal.
	lease, err := take(ctx, *name, *noWait)
	if err != nil {
		return err
	}
	defer lease.Release()
	if err := cluster.Down(ctx, *name); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cluster %s removed\n", *name)
	return nil
}

// clusterHeal is `lockcheck cluster heal`: take the cluster, heal what
// killed runs left and wait until it is healthy. State lockcheck did not
// make is named; --force removes it too (every iptables rule of the nodes:
// on a cluster lockcheck made, none is anyone's firewall).
func clusterHeal(ctx context.Context, args []string, stdout io.Writer) error {
	fs, name, noWait, force := newHealFlags()
	if err := parse(fs, args); err != nil {
		return err
	}
	lease, err := take(ctx, *name, *noWait)
	if err != nil {
		return err
	}
	defer lease.Release()
	log := slog.Default()
	c, err := cluster.Attach(ctx, cluster.WithName(*name), cluster.WithLogger(log))
	if err != nil {
		return err
	}
	env := runner.ClusterEnv{Cluster: c}
	if *force {
		for _, n := range c.Nodes() {
			fs, err := n.Foreign(ctx)
			if err != nil || len(fs) == 0 {
				continue
			}
			if err := n.RemoveForeign(ctx); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s: removed %s\n", n.Name, strings.Join(fs, "; "))
		}
	}
	if foreign := nemesis.Foreign(ctx, env.Targets(), nil); len(foreign) > 0 {
		var ws []string
		for _, f := range foreign {
			ws = append(ws, f.Node+": "+f.What)
		}
		return fmt.Errorf("not lockcheck's, left in place: %s; `lockcheck cluster heal --force --name %s` removes it", strings.Join(ws, "; "), *name)
	}
	hctx, cancel := context.WithTimeout(ctx, nemesis.HealBudget(len(env.Spares()) > 0, runner.Defaults().HealTimeout))
	defer cancel()
	if err := runner.HealLeftovers(hctx, env, nil, log); err != nil {
		return err
	}
	return printStatus(ctx, c, stdout)
}

// newImageFlags is `lockcheck cluster image`'s flag set.
func newImageFlags() (*flag.FlagSet, *string) {
	fs := newFlags("image")
	version := fs.String("version", cluster.DefaultVersion, "Cassandra version: "+cluster.VersionsHelp())
	return fs, version
}

func clusterImage(ctx context.Context, args []string, stdout io.Writer) error {
	fs, version := newImageFlags()
	if err := parse(fs, args); err != nil {
		return err
	}
	ref, err := cluster.BuildImage(ctx, cluster.WithVersion(*version), cluster.WithLogger(slog.Default()))
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, ref)
	return nil
}

// lazyFSBinary finds the lockcheck-lazyfs binary that `make build` puts
// beside lockcheck ($LOCKCHECK_LAZYFS_BIN first, then beside this
// executable, then on PATH).
func lazyFSBinary() (string, error) {
	if p := os.Getenv("LOCKCHECK_LAZYFS_BIN"); p != "" {
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "lockcheck-lazyfs")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("lockcheck-lazyfs"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: --lazyfs: lockcheck-lazyfs is neither beside this lockcheck nor on PATH (build both with `make build`, or set LOCKCHECK_LAZYFS_BIN)", cluster.ErrBadOption)
}
