// Command histgen writes a synthetic history (checker/synth) to a file, for
// the checker benchmarks of bench/check.sh.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/lockcheck/lockcheck/checker/synth"
	"github.com/lockcheck/lockcheck/history"
)

func main() {
	var cfg synth.Config
	out := flag.String("o", "history.jsonl", "output file")
	flag.IntVar(&cfg.Events, "events", 100000, "lines, about")
	flag.IntVar(&cfg.Clients, "clients", 10, "concurrent clients")
	flag.IntVar(&cfg.Locks, "locks", 1, "locks")
	flag.Float64Var(&cfg.FailRate, "fail", 0.05, "chance a grantable acquire fails")
	flag.Float64Var(&cfg.InfoRate, "info", 0.02, "chance a grantable acquire is info")
	flag.DurationVar(&cfg.Lease, "lease", time.Second, "lease")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed")
	flag.StringVar(&cfg.Anomaly, "anomaly", "", `inject one anomaly: "overlap" or "lost"`)
	flag.DurationVar(&cfg.Nemesis, "nemesis", 0, "a partition window every this long")
	flag.Parse()
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(bw)
	if err := synth.Generate(cfg, func(op history.Op) error { return enc.Encode(op) }); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := bw.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
