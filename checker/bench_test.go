package checker

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockcheck/lockcheck/checker/synth"
	"github.com/lockcheck/lockcheck/history"
)

// The histories of the benchmarks (bench/check.sh measures the same ones
// end to end with peak memory): many locks, and one hot lock contended by
// many clients with failed and unknown acquires; valid, and with one
// anomaly.
var benchCases = []struct {
	name string
	cfg  synth.Config
	want Verdict
}{
	{"many-locks/valid", synth.Config{Clients: 100, Locks: 1000, FailRate: 0.05, InfoRate: 0.02, Seed: 1}, Valid},
	{"many-locks/overlap", synth.Config{Clients: 100, Locks: 1000, FailRate: 0.05, InfoRate: 0.02, Seed: 1, Anomaly: synth.AnomalyOverlap}, Invalid},
	{"hot-lock/valid", synth.Config{Clients: 50, Locks: 1, FailRate: 0.05, InfoRate: 0.05, Lease: 200 * time.Millisecond, Seed: 1}, Valid},
	{"hot-lock/lost", synth.Config{Clients: 50, Locks: 1, FailRate: 0.05, InfoRate: 0.05, Lease: 200 * time.Millisecond, Seed: 1, Anomaly: synth.AnomalyLost}, Invalid},
}

func writeSynth(b *testing.B, cfg synth.Config) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "history.jsonl")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(bw)
	if err := synth.Generate(cfg, func(op history.Op) error { return enc.Encode(op) }); err != nil {
		b.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkCheckFile reads, validates and checks a history file.
func BenchmarkCheckFile(b *testing.B) {
	for _, size := range []struct {
		name   string
		events int
	}{{"100k", 100_000}, {"1M", 1_000_000}} {
		for _, bc := range benchCases {
			b.Run(size.name+"/"+bc.name, func(b *testing.B) {
				cfg := bc.cfg
				cfg.Events = size.events
				path := writeSynth(b, cfg)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					res, err := CheckFile(context.Background(), path)
					if err != nil {
						b.Fatal(err)
					}
					if res.Verdict != bc.want {
						b.Fatalf("verdict %s, want %s: %+v", res.Verdict, bc.want, res.Checks)
					}
				}
			})
		}
	}
}

// BenchmarkLinearizableWhole is plain porcupine on each lock's whole
// history (no cutting), for comparison with the pieces.
func BenchmarkLinearizableWhole(b *testing.B) {
	for _, bc := range benchCases[2:3] {
		for _, seg := range []int{0, 64} {
			b.Run(bc.name+"/segment-min-"+map[int]string{0: "whole", 64: "64"}[seg], func(b *testing.B) {
				cfg := bc.cfg
				cfg.Events = 100_000
				ops := synth.Ops(cfg)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					res, err := CheckValidated(context.Background(), ops, WithSegmentMin(seg), WithTimeout(5*time.Minute))
					if err != nil {
						b.Fatal(err)
					}
					if v := checkVerdict(res, CheckLinear); v != Valid {
						b.Fatalf("linearizable: %s", v)
					}
				}
			})
		}
	}
}

// BenchmarkPlainPorcupine is porcupine alone with the full model (every
// info op kept as "took effect at some later time, or never", failed ops
// given as ops without effect) on the hot lock's whole history: what the
// checker avoids. Bounded to 2 minutes.
func BenchmarkPlainPorcupine(b *testing.B) {
	for _, n := range []int{10_000, 30_000, 100_000, 200_000} {
		b.Run(fmt.Sprintf("hot-lock/%d", n), func(b *testing.B) {
			cfg := benchCases[2].cfg
			cfg.Events = n
			ops := synth.Ops(cfg)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				r := referenceCheckFails(ops, 2*time.Minute, true)
				b.ReportMetric(map[porcupine.CheckResult]float64{porcupine.Ok: 1, porcupine.Unknown: 0, porcupine.Illegal: -1}[r], "ok")
			}
		})
	}
}

// BenchmarkPlainPorcupineFile is porcupine alone, with the full model (as
// BenchmarkPlainPorcupine), on the history file named by
// LOCKCHECK_BENCH_HISTORY, every lock a partition checked in parallel: the
// comparison bench/check.sh makes with `lockcheck check` on the same files.
// LOCKCHECK_BENCH_TIMEOUT bounds it (default 10m).
func BenchmarkPlainPorcupineFile(b *testing.B) {
	path := os.Getenv("LOCKCHECK_BENCH_HISTORY")
	if path == "" {
		b.Skip("LOCKCHECK_BENCH_HISTORY not set")
	}
	timeout := 10 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("LOCKCHECK_BENCH_TIMEOUT")); err == nil {
		timeout = d
	}
	for b.Loop() {
		ops, err := history.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		r := plainPorcupine(ops, timeout)
		b.ReportMetric(map[porcupine.CheckResult]float64{porcupine.Ok: 1, porcupine.Unknown: 0, porcupine.Illegal: -1}[r], "ok")
	}
}

// plainPorcupine checks every lock of ops with porcupine and the full
// nondeterministic model: info ops pending forever, failed ops as ops
// without effect, one partition per lock.
func plainPorcupine(ops []history.Op, timeout time.Duration) porcupine.CheckResult {
	type in struct {
		op   lockOp
		lock string
	}
	calls := pairCalls(ops)
	var hist []porcupine.Operation
	for i := range calls {
		c := &calls[i]
		var kind byte
		switch c.f {
		case "acquire":
			kind = 'a'
		case "renew":
			kind = 'n'
		case "release":
			kind = 'r'
		default:
			continue
		}
		ret := c.ret
		if c.typ != history.OK {
			ret = Never
		}
		if c.typ == history.Fail {
			kind, ret = 'f', c.ret
		}
		hist = append(hist, porcupine.Operation{ClientId: c.proc, Call: c.inv, Return: ret,
			Input: &in{op: lockOp{kind: kind, proc: c.proc, inv: c.inv, ret: ret, exp: expiry(c.inv, c.leaseMS), info: c.typ == history.Info}, lock: c.lock}})
	}
	m := porcupine.NondeterministicModel{
		Init: func() []any { return []any{free} },
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			for _, op := range history {
				l := op.Input.(*in).lock
				by[l] = append(by[l], op)
			}
			out := make([][]porcupine.Operation, 0, len(by))
			for _, p := range by {
				out = append(out, p)
			}
			return out
		},
		Step: func(state, input, output any) []any {
			x := input.(*in).op
			if x.kind == 'f' {
				return []any{state}
			}
			ok, next := lockStep(state, &lockOp{kind: x.kind, proc: x.proc, inv: x.inv, ret: x.ret, exp: x.exp}, output)
			switch {
			case x.info && ok:
				return []any{state, next}
			case x.info:
				return []any{state}
			case ok:
				return []any{next}
			}
			return nil
		},
	}
	return porcupine.CheckOperationsTimeout(m.ToModel(), hist, timeout)
}
