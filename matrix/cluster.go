package matrix

import (
	"fmt"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/scenario"
)

// ClusterOptions are the options of a cluster of configuration c,
// name and logger aside. lazyFS is the lockcheck-lazyfs binary, needed only
// by a configuration on the lazy filesystem.
func ClusterOptions(c scenario.Cluster, lazyFS string) ([]cluster.Option, error) {
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
	if c.PaxosStatePurging != "" {
		opts = append(opts, cluster.WithPaxosStatePurging(c.PaxosStatePurging))
	}
	if c.NoPaxosCache {
		opts = append(opts, cluster.WithoutPaxosCache())
	}
	if c.PaxosUpgrade {
		opts = append(opts, cluster.WithPaxosUpgrade())
	}
	if c.Accord != "" {
		opts = append(opts, cluster.WithAccord(c.Accord))
	}
	if c.AccordStopMarker != "" {
		opts = append(opts, cluster.WithAccordStopMarker(c.AccordStopMarker))
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

// Fits says whether a running cluster is of configuration c, so
// that a row can run on it rather than on a cluster started for it.
func Fits(cl *cluster.Cluster, c scenario.Cluster) bool {
	want := scenario.Cluster{Nodes: len(cl.Nodes()), Paxos: cl.Paxos(), LazyFS: cl.LazyFS(), Commitlog: cl.CommitlogSync(), DCs: len(cl.DCs()),
		Spares: len(cl.Spares()), SkipPaxosRepair: cl.SkipPaxosRepair(), PaxosStatePurging: cl.PaxosStatePurging(),
		NoPaxosCache: cl.NoPaxosCache(), PaxosUpgrade: cl.PaxosUpgrade(), Accord: cl.Accord(),
		AccordStopMarker: cl.AccordStopMarker()}
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
