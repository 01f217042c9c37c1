package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/lease"
	"github.com/lockcheck/lockcheck/lockd"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/runner"
)

// lockdFlags are `lockcheck lockd`'s flags.
type lockdFlags struct {
	listen, hosts, keyspace, cluster, lock string
	rf                                     int
}

func newLockdFlags() (*flag.FlagSet, *lockdFlags) {
	fs := flag.NewFlagSet("lockd", flag.ContinueOnError)
	f := &lockdFlags{}
	fs.StringVar(&f.listen, "listen", defaultListen, "address to serve on")
	fs.StringVar(&f.hosts, "hosts", "", "Cassandra contact points, comma-separated (default: the cluster of lockcheck cluster up)")
	fs.StringVar(&f.keyspace, "keyspace", cluster.DefaultKeyspace, "keyspace of the lease table")
	fs.StringVar(&f.cluster, "cluster", cluster.DefaultName, "name of the cluster started by lockcheck cluster up (used without --hosts)")
	fs.IntVar(&f.rf, "rf", 0, "with --hosts: replication factor if the keyspace must be created (default: hosts, at most 3)")
	fs.StringVar(&f.lock, "lock", "lease-fenced", "the lease served: lease-fenced (tokens) or lease (seed 004 as published: IF NOT EXISTS and a TTL, no fencing)")
	return fs, f
}

// runLockd is `lockcheck lockd --listen ADDR [--hosts H1,H2]`: the REST lock
// service of package lockd, on the cluster of `lockcheck cluster up` unless
// --hosts names contact points. It stops gracefully when ctx ends (SIGTERM).
func runLockd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, f := newLockdFlags()
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitValid
		}
		return exitError
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "lockcheck lockd: "+format+"\n", a...)
		return exitError
	}
	if fs.NArg() > 0 {
		return fail("unexpected arguments %q", fs.Args())
	}
	newLease, ok := lockd.Leases[f.lock]
	if !ok {
		return fail("--lock %q: want lease-fenced or lease", f.lock)
	}
	log := slog.Default()
	if _, err := recipe.Ident(f.keyspace); err != nil {
		return fail("--keyspace: %v", err)
	}
	connectCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	s, err := f.session(connectCtx, log)
	if err == nil {
		err = lease.CreateSchema(connectCtx, s, f.keyspace)
	}
	cancel()
	if err != nil {
		if s != nil {
			s.Close()
		}
		return fail("%v", err)
	}
	defer s.Close()
	lk, err := newLease(s, recipe.WithKeyspace(f.keyspace), recipe.WithLogger(log))
	if err != nil {
		return fail("%v", err)
	}
	srv := &http.Server{Handler: lockd.Handler(lk, log)}
	// Let requests in flight finish: an acquire cut off mid-Paxos would
	// leave its client with no answer at all.
	err = serveUntil(ctx, srv, f.listen, 15*time.Second, func(addr string) {
		fmt.Fprintf(stdout, "lockd: serving %s locks on http://%s/v1/locks/{name}\n", f.lock, addr)
	})
	if err != nil {
		return fail("%v", err)
	}
	fmt.Fprintln(stdout, "lockd: stopped")
	return exitValid
}

// session connects to --hosts (creating the keyspace if needed) or to the
// cluster of `lockcheck cluster up`, healed of what an earlier run left.
func (f *lockdFlags) session(ctx context.Context, log *slog.Logger) (*gocql.Session, error) {
	if f.hosts != "" {
		var hs []string
		for h := range strings.SplitSeq(f.hosts, ",") {
			if h = strings.TrimSpace(h); h != "" {
				hs = append(hs, h)
			}
		}
		return lockd.Connect(ctx, hs, f.keyspace, f.rf, log)
	}
	c, err := cluster.Attach(ctx, cluster.WithName(f.cluster), cluster.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("no --hosts given and no cluster to attach to: %w", err)
	}
	if f.keyspace != c.Keyspace() {
		return nil, fmt.Errorf("--keyspace %s: the cluster's keyspace is %s", f.keyspace, c.Keyspace())
	}
	// Healed under the cluster's lease (a run faulting it is waited for),
	// then given back: a run with --lock-url faults the cluster lockd serves on.
	if err := runner.HealLeftovers(ctx, runner.ClusterEnv{Cluster: c}, nil, log); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", f.cluster, err)
	}
	s, err := c.Session(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", f.cluster, err)
	}
	return s, nil
}
