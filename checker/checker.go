package checker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Verdict is the outcome of a check or of a run.
type Verdict string

const (
	Valid   Verdict = "valid"
	Invalid Verdict = "invalid"
	Unknown Verdict = "unknown" // a checker ran out of time or lacked data
)

// Merge returns the worse of two verdicts: invalid beats unknown beats valid.
func Merge(a, b Verdict) Verdict {
	rank := func(v Verdict) int {
		switch v {
		case Invalid:
			return 2
		case Unknown:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// Names of the checks.
const (
	CheckMutex      = "mutual-exclusion"
	CheckLinear     = "linearizable-lock"
	CheckFencing    = "fencing-tokens" // judged under the fenced promise only
	CheckResource   = "resource"
	CheckStatistics = "statistics"
)

// CheckResult is one checker's outcome.
type CheckResult struct {
	Name    string  `json:"name"`
	Verdict Verdict `json:"verdict"`
	// Judged is false when the recipe's promise does not cover this
	// property: its anomalies are then findings and do not fail the run.
	Judged    bool    `json:"judged"`
	Skipped   bool    `json:"skipped,omitempty"` // nothing to check (e.g. no resource ops)
	Anomalies int     `json:"anomalies"`
	Detail    string  `json:"detail,omitempty"`
	Seconds   float64 `json:"seconds"`
}

// Anomaly kinds.
const (
	KindOverlap          = "overlapping-holds"
	KindNonLinearizable  = "non-linearizable"
	KindLostAdd          = "lost-add"
	KindDuplicate        = "duplicate-element"
	KindStaleWrite       = "stale-holder-write"
	KindLateWrite        = "late-write" // finding: outlived the hold, nobody else held
	KindFailedAddPresent = "failed-add-present"
	KindPhantom          = "phantom-element"
	KindMalformedRead    = "malformed-read" // an ok read whose value is not an array
	// KindTokenOrder: under the fenced promise, a new grant whose token is
	// not greater than a number token granted before it on that lock, or
	// equals a token granted before it or while it was in flight: the
	// lock's fault (fencing.go).
	KindTokenOrder = "token-not-increasing"
	// KindTokensUnordered (a finding): a lock whose tokens mix numbers with
	// other kinds, which the checker cannot order against each other: the
	// fencing check's verdict is unknown.
	KindTokensUnordered = "tokens-unordered"
	// KindStuckLock (a finding): a lock held for good by a process that
	// ended, its last operation's outcome unknown, holding a grant with no
	// lease: no later acquire can be granted safely (stuck.go).
	KindStuckLock = "stuck-lock"
)

// Anomaly is one violation (or, in Result.Findings, an observation that the
// recipe's promise does not cover).
type Anomaly struct {
	Kind      string       `json:"kind"`
	Check     string       `json:"check"`
	Lock      string       `json:"lock,omitempty"`
	Processes []int        `json:"processes,omitempty"`
	Start     int64        `json:"start"` // window, ns since the run started
	End       int64        `json:"end"`
	Message   string       `json:"message"`
	Ops       []history.Op `json:"ops,omitempty"` // the operations involved
}

// Result is a run's verdict; serialized as results.json.
type Result struct {
	Verdict   Verdict         `json:"verdict"`
	Promise   history.Promise `json:"promise,omitempty"`
	Meta      *history.Meta   `json:"meta,omitempty"`
	Checks    []CheckResult   `json:"checks"`
	Anomalies []Anomaly       `json:"anomalies"`
	Findings  []Anomaly       `json:"findings"`
	// AnomaliesOmitted counts anomalies found beyond the reported ones.
	AnomaliesOmitted int   `json:"anomalies_omitted,omitempty"`
	Stats            Stats `json:"stats"`
	// Pending counts invocations without completion (a killed run): they
	// are checked as info.
	Pending   int  `json:"pending,omitempty"`
	Truncated bool `json:"truncated,omitempty"` // an unterminated last line was dropped
	// Injected is the fault kinds requested and dealt (filled by the
	// report's build, which reads the fault lines; nil from Check alone).
	Injected *history.Injected `json:"injected,omitempty"`
	// SetupFailed is why the run's set-up failed (its history's
	// setup-failed line): no test ran, so the verdict is unknown.
	SetupFailed string `json:"setup_failed,omitempty"`
	// Linearizability keeps porcupine's data for the report (not in JSON).
	Linearizability []LockLinearization `json:"-"`
	// Liveness is each lock's availability and stuck periods (liveness.go):
	// a result of its own, never part of the verdict. Nil for a history
	// without lock operations.
	Liveness *Liveness `json:"liveness,omitempty"`
	// Holds are the holds the checks saw, by start (for the report; not in
	// JSON).
	Holds []Hold `json:"-"`
	// Timeline is the grants and leases the checks derived, when asked
	// for (WithTimeline; not in JSON).
	Timeline *Timeline `json:"-"`
}

// Option configures Check.
type Option func(*config)

type config struct {
	timeout    time.Duration
	log        *slog.Logger
	workers    int
	segmentMin int
	maxReports int
	visualize  int
	// acquireTimeout and stuckBound are liveness's (liveness.go); zero:
	// the meta line's or the default.
	acquireTimeout, stuckBound time.Duration
	timeline                   bool // keep Result.Timeline (timeline.go)
}

// WithTimeout bounds the whole check; a checker that runs out of time
// gives "unknown".
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithWorkers sets how many pieces of lock history are checked in parallel
// (default GOMAXPROCS).
func WithWorkers(n int) Option { return func(c *config) { c.workers = n } }

// WithSegmentMin sets the smallest piece of a lock's history handed to
// porcupine (default 64 operations: a piece waits in memory until it closes, so with many locks small pieces keep memory low); 0 checks each lock's history whole,
// as plain porcupine does.
func WithSegmentMin(n int) Option { return func(c *config) { c.segmentMin = n } }

// WithMaxReported caps the anomalies reported with their ops per kind
// (default 100); the rest are counted.
func WithMaxReported(n int) Option { return func(c *config) { c.maxReports = n } }

// WithVisualizations sets how many locks keep porcupine data for the report
// (default 8; locks with a violation first).
func WithVisualizations(n int) Option { return func(c *config) { c.visualize = n } }

func newConfig(opts []Option) config {
	c := config{log: slog.Default(), segmentMin: 64, maxReports: 100, visualize: 8}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// CheckFile reads, validates and checks a history file as it streams in:
// memory grows with the locks, the concurrency and the protected sets, not
// with the length of the history. A history that breaks the format gives an
// error wrapping history.ErrInvalid.
func CheckFile(ctx context.Context, path string, opts ...Option) (Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return Result{}, fmt.Errorf("checker: %w", err)
	}
	defer f.Close()
	return CheckReader(ctx, f, opts...)
}

// CheckReader reads, validates and checks a history as it streams in.
func CheckReader(ctx context.Context, r io.Reader, opts ...Option) (Result, error) {
	cfg := newConfig(opts)
	ctx, cancel := withTimeout(ctx, cfg)
	defer cancel()
	e := newMulti(ctx, cfg, false, false)
	truncated, err := history.Stream(r, func(op history.Op) error { e.feed(op); return nil })
	if err != nil {
		e.finish() // stop the workers
		return Result{}, err
	}
	res := e.finish()
	res.Truncated = truncated
	return res, nil
}

// CheckValidated checks ops that a history.Reader already validated (as
// history.ReadFile returns them), without validating them again. The
// result keeps every hold, for the report's timeline.
func CheckValidated(ctx context.Context, ops []history.Op, opts ...Option) (Result, error) {
	return check(ctx, ops, newConfig(opts)), nil
}

// Check validates and checks a history held in memory.
func Check(ctx context.Context, ops []history.Op, opts ...Option) (Result, error) {
	if err := history.Validate(ops); err != nil {
		return Result{}, err
	}
	return check(ctx, ops, newConfig(opts)), nil
}

func withTimeout(ctx context.Context, cfg config) (context.Context, context.CancelFunc) {
	if cfg.timeout > 0 {
		return context.WithTimeout(ctx, cfg.timeout)
	}
	return ctx, func() {}
}

func check(ctx context.Context, ops []history.Op, cfg config) Result {
	ctx, cancel := withTimeout(ctx, cfg)
	defer cancel()
	e := newMulti(ctx, cfg, false, true)
	// A stream judges by the meta line from where it appears (lockcheck
	// writes it first); a history in memory may have it anywhere.
	for i := range ops {
		if ops[i].Process == history.NemesisProcess && ops[i].F == history.FMeta {
			e.feedMeta(ops[i])
			break
		}
	}
	for _, op := range ops {
		e.feed(op)
	}
	return e.finish()
}

// kindRank orders anomalies by how directly they point at the cause: a
// stale write or an overlap explains the lost adds that follow from it.
var kindRank = map[string]int{
	KindOverlap: 0, KindTokenOrder: 1, KindStaleWrite: 2, KindNonLinearizable: 3, KindFailedAddPresent: 4,
	KindDuplicate: 5, KindPhantom: 6, KindMalformedRead: 7, KindLostAdd: 8, KindLateWrite: 9, KindStuckLock: 10, KindTokensUnordered: 11,
}

func sortAnomalies(as []Anomaly) {
	sort.SliceStable(as, func(i, j int) bool {
		ri, rj := kindRank[as[i].Kind], kindRank[as[j].Kind]
		if ri != rj {
			return ri < rj
		}
		return as[i].Start < as[j].Start
	})
}

// checkOutput is what one checker hands back.
type checkOutput struct {
	result    CheckResult
	anomalies []Anomaly
	findings  []Anomaly
	omitted   int
}

// add records an anomaly, keeping at most max per kind with details.
func (o *checkOutput) add(a Anomaly, max int, perKind map[string]int) {
	if perKind[a.Kind] >= max {
		o.omitted++
		return
	}
	perKind[a.Kind]++
	o.anomalies = append(o.anomalies, a)
}
