// Package runner runs a test: cluster + recipe + workload + nemesis +
// checkers + duration + seed. Running one stores its history, checks it and
// writes its report. The jepsen matrix of the project lives in its tests.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/exclusive"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/spec"
	"github.com/lockcheck/lockcheck/workload"
)

// Setup prepares a recipe on env (schema, sessions) and returns how to make
// each client's lock, the protected resource, and a function that releases
// what Setup opened.
type Setup func(ctx context.Context, env Env, t *Test) (workload.NewLockFunc, workload.Resource, func(), error)

// Recipe is a lock recipe the runner can test.
type Recipe struct {
	Name    string
	Promise history.Promise
	Setup   Setup
	// DCLocal: the recipe takes Test.DCLocal (recipe.Entry.DCLocal).
	DCLocal bool
	// ownSetupTurn: Setup takes the set-up turn (setupMu) itself, around
	// what creates tables only, so that what needs none (a plug-in's other
	// processes starting) overlaps another run's set-up.
	ownSetupTurn bool
}

// Test is one run: its settings (the Spec: what the meta line records and
// a replay runs again) and what is not written down: the lock's Recipe
// (made from the Spec's lock name, or the caller's own), a Schedule, where
// progress and the log go. Start from Defaults: Run fills the Spec's fields
// whose zero means nothing (spec.Spec.Fill). The cluster's size and Paxos
// variant are the Env's, recorded from it.
type Test struct {
	spec.Spec
	Recipe Recipe // the lock under test
	// Schedule, when set, is dealt in place of random faults (`lockcheck
	// replay`, `run --schedule`): its kinds are the run's (Nemesis is set
	// from it), its steps' times and parameters are the faults'. When a
	// step follows another's window (Step.After) or a window is a range
	// movement (nemesis.Schedule.DealtInFull) the run lasts at least Time
	// and until the schedule's last window has ended, at most Time plus
	// nemesis.FollowWait: a Jepsen user who wrote "kill n1 after the join
	// streamed", or "leave after the join", expects that kill or leave in
	// the history, not a run that ended before the join was done on a slow
	// machine. A drawn run of range movements (nemesis.MovesRing), or one
	// with EveryKind, runs on
	// in the same way until each of its kinds was dealt once
	// (nemesis.WithFirstRound). The phases line
	// says how long it waited (schedule_wait_ms) and how many steps it
	// never dealt (undealt); the matrix counts a run with undealt steps
	// among those without every fault.
	Schedule *nemesis.Schedule

	Progress io.Writer // a progress line about every second; nil: none
	Log      *slog.Logger
	// NoNodeLogs leaves the nodes' logs out of the run directory: a test
	// whose store is removed when it ends reads the verdict, never the
	// logs, and copying them cost about a second a run.
	NoNodeLogs bool

	runID string // the run directory's name, unique in this process (uniqueRunID): lock names are fresh each run
	// pins are the clients' coordinators (client -> node name) when
	// PinClients is set.
	pins map[int]string
	// dcs are the clients' data centres (client -> data centre) on a
	// cluster of several, clients not pinned: each client's session prefers
	// its own data centre's nodes.
	dcs map[int]string
	// runLog writes to the run's lockcheck.log only: plug-ins' stderr and
	// process lines go there, not to the terminal.
	runLog *slog.Logger
}

// SetupError is a recipe that could not be set up (a plug-in that would not
// start, a lock service that does not answer): the run ends before any
// client ran, with no report.
type SetupError struct {
	Recipe string
	Err    error
	// cluster: the cluster's heal or health check failed (not the lock's
	// set-up): the run leaves it as it found it, not known healed.
	cluster bool
}

func (e *SetupError) Error() string { return fmt.Sprintf("set up %s: %v", e.Recipe, e.Err) }

func (e *SetupError) Unwrap() error { return e.Err }

func (t *Test) defaults() {
	t.fillDefaults()
	if t.Name == "" {
		nem := "none"
		if len(t.Nemesis) > 0 {
			nem = strings.Join(t.Nemesis, "_")
		}
		t.Name = t.Recipe.Name + "-" + nem
		if t.Workload != workload.ShapeCycle && t.Workload != workload.ShapeRegister {
			t.Name += "-" + t.Workload
		}
		if t.DCLocal {
			t.Name += "-dc-local"
		}
	}
	if t.Log == nil {
		t.Log = slog.Default()
	}
}

// LockNames are the names the clients contend for. They are new in every
// run, so that a run on a reused cluster starts from empty locks and sets.
func (t *Test) LockNames() []string {
	names := make([]string, t.Locks)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%s-l%d", t.Name, t.runID, i)
	}
	return names
}

// ScheduleFile is the schedule a run dealt (a replay's), in its directory.
const ScheduleFile = "schedule.json"

// Outcome is what a run produced.
type Outcome struct {
	Dir     string
	Verdict checker.Verdict
	Result  checker.Result
	Ops     int64
	// Faults counts the fault windows started, by kind.
	Faults map[string]int
	// NeverDealt are the kinds requested (Test.Nemesis) that no fault
	// window of the run had: the run ended before their turn, or their
	// starts failed.
	NeverDealt []string
	// Phases are how long each phase took against the requested time.
	Phases history.RunPhases
	// Timing is how long every phase of Run took, its set-up, check and
	// report included: the run's cost beyond its own time.
	Timing Timing
}

// Store is where runs are kept and how a stored run is checked and reported
// (reports.NewRunDir and reports.Build).
type Store interface {
	NewRunDir(store, test string, at time.Time) (string, error)
	Build(ctx context.Context, dir string) (checker.Result, error)
}

// Run runs t on env and returns its outcome: t's Spec, with its Recipe, or
// the recipe of the registry the Spec's lock names when Recipe is zero. The history is streamed to the
// run directory as it happens; when ctx is cancelled (SIGINT) the run stops
// early but still heals the cluster, reads, checks and reports what ran. An
// error with a non-empty Outcome.Dir means the run directory holds what
// could be saved.
func Run(ctx context.Context, env Env, store Store, t Test) (out Outcome, err error) {
	sw := newStopwatch()
	begin := sw.last
	if err := t.resolve(); err != nil {
		return Outcome{}, fmt.Errorf("runner: %w", err)
	}
	if t.PinClients {
		var targets []nemesis.Target
		if env != nil {
			targets = env.Targets()
		}
		if len(targets) == 0 {
			return Outcome{}, errors.New("runner: --pin-clients needs the cluster's nodes (with --hosts: --ssh-key)")
		}
		t.pins = PinRoundRobin(targets, t.Clients)
	} else if env != nil {
		t.dcs = PlaceInDCs(env.DCs(), t.Clients)
	}
	// The run's one nemesis, made now from the Spec: a kind the cluster
	// cannot serve (a schedule's above all: it names kinds and nodes) is
	// refused before the run has a directory. Its recorder, clients and
	// logger come once the run has them (run: Attach).
	timeUp := make(chan struct{})
	nem, inFull, err := t.newNemesis(env, timeUp)
	if err != nil {
		return Outcome{}, fmt.Errorf("runner: %w", err)
	}
	// The cluster is this run's alone from before it heals what an
	// earlier run left until it is healthy again: a second run on it would
	// undo this one's faults as leftovers, and both would report what they
	// did not test. A refused run leaves no run directory.
	lease, err := TakeCluster(ctx, env, t.NoWait, t.say)
	if err != nil {
		return Outcome{}, fmt.Errorf("runner: %w", err)
	}
	defer lease.Release()
	var tm Timing
	tm.Requested = t.Time
	sw.lap(&tm.Lease)
	dir, err := store.NewRunDir(t.Store, t.Name, time.Now())
	if err != nil {
		return Outcome{}, fmt.Errorf("runner: %w", err)
	}
	out = Outcome{Dir: dir, Faults: map[string]int{}}
	t.runID = uniqueRunID(filepath.Base(dir))
	logFile, err := os.Create(filepath.Join(dir, "lockcheck.log"))
	if err != nil {
		return out, fmt.Errorf("runner: %w", err)
	}
	defer logFile.Close()
	fileHandler := slog.NewTextHandler(logFile, nil)
	log := slog.New(teeHandler{t.Log.Handler(), fileHandler}).With("test", t.Name)
	t.runLog = slog.New(fileHandler).With("test", t.Name)
	// Every phase's time, logged when Run returns (whatever it returns).
	defer func() {
		tm.Total = time.Since(begin)
		out.Timing = tm
		log.Info("run timing", "took", tm.String(), "phases", tm)
	}()
	// Where the history goes, said at once: a run killed mid-way is found
	// by it.
	log.Info("run started", "dir", dir)

	sf := &storeFailure{done: make(chan struct{})}
	w, err := history.Create(filepath.Join(dir, "history.jsonl"), history.WithOnFull(sf.set))
	if err != nil {
		return out, &StoreError{Dir: dir, Err: err}
	}
	mon := newMonitor(w)
	mon.store = sf
	meta, err := t.meta()
	if err != nil {
		w.Close()
		return out, fmt.Errorf("runner: %w", err)
	}
	if t.Schedule != nil {
		// The schedule dealt is kept beside the history: a replay of a
		// replay, or a shrink, starts from it.
		if err := t.Schedule.Save(filepath.Join(dir, ScheduleFile)); err != nil {
			return out, fmt.Errorf("runner: %w", err)
		}
		meta.Config["schedule"] = ScheduleFile
		if t.Schedule.Source != "" {
			meta.Config["schedule"] += " (from " + t.Schedule.Source + ")"
		}
	}
	// What the heal will not touch is said at once, before anything
	// waits, and kept in the meta line: the report never says "no faults"
	// over a rule someone else left.
	if env != nil {
		fctx, cancel := context.WithTimeout(ctx, time.Minute)
		meta.Foreign = nemesis.Foreign(fctx, env.Targets(), foreignFix(env))
		cancel()
		for _, f := range meta.Foreign {
			t.say(f.String())
		}
	}
	// What the cluster is, not what was asked for: a reused cluster keeps
	// its own size and Paxos variant.
	if env != nil {
		meta.Config["nodes"] = strconv.Itoa(len(env.Targets()))
		maps.Copy(meta.Config, env.Describe())
	}
	if _, err := w.Append(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.FMeta, Value: mustJSON(meta)}); err != nil {
		w.Close()
		return out, fmt.Errorf("runner: %w", err)
	}

	sw.lap(&tm.Prepare)
	runErr := run(ctx, env, &t, runNemesis{nem, inFull, timeUp}, mon, log, &out, sw, &tm, leftHealed(env, lease))
	sw.lap(&tm.Close)
	// A one-way kind (paxos-upgrade) leaves the cluster changed past the
	// run's heal: the next run heals its leftovers in full, which reverts
	// and records it.
	markHealed(env, lease, leavesHealed(runErr) && (nem == nil || !nem.OneWay()))
	// Healed and healthy (or given up on): the next run may have it while
	// this one checks.
	lease.Release()
	if se := (*SetupError)(nil); errors.As(runErr, &se) {
		// The store keeps what was recorded, marked: its check says
		// unknown, never valid, and the caller prints no verdict.
		t.runLog.Error("run not started", "err", runErr)
		if _, err := mon.Append(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.FSetupFailed,
			Value: mustJSON(history.SetupFailed{Cause: se.Error()})}); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("runner: record the failed set-up: %w", err))
		}
		if err := w.Close(); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("runner: close history: %w", err))
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if _, err := store.Build(cctx, dir); err != nil {
			log.Warn("failed set-up not reported", "err", err)
		}
		sw.lap(&tm.Check)
		return out, runErr
	}
	if err := w.Close(); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("runner: close history: %w", err))
	}
	out.Ops = mon.ops.Load()
	if err := sf.cause(); err != nil {
		// The clients and faults stopped and the cluster healed; what the
		// history holds is checked as any run's, and the caller says the
		// store failed rather than vouching for a verdict.
		runErr = &StoreError{Dir: dir, Ops: out.Ops, Err: errors.Join(err, runErr)}
	}

	// Check and report even after an error or an interrupt: what ran counts.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
	defer cancel()
	if env != nil && !t.NoNodeLogs {
		if err := env.CopyLogs(cctx, filepath.Join(dir, "nodes")); err != nil {
			log.Warn("node logs not copied", "err", err)
		}
	}
	sw.lap(&tm.Logs)
	log.Info("checking")
	res, err := store.Build(cctx, dir)
	sw.lap(&tm.Check)
	if err != nil {
		return out, errors.Join(runErr, fmt.Errorf("runner: check and report: %w", err))
	}
	out.Result = res
	out.Verdict = res.Verdict
	log.Info("run done", "verdict", res.Verdict, "dir", dir, "ops", out.Ops)
	return out, runErr
}

// leavesHealed tells whether a run that ended with runErr left the cluster
// healed and healthy: one without an error, and one whose lock could not be
// set up (a plug-in that would not start) after the cluster was healed and
// found healthy, since it dealt nothing. The next run of the holding then
// only waits for a healthy cluster (healed.go).
func leavesHealed(runErr error) bool {
	if runErr == nil {
		return true
	}
	var se *SetupError
	return errors.As(runErr, &se) && !se.cluster
}

// runNemesis is the run's nemesis (Test.newNemesis) as run needs it.
type runNemesis struct {
	*nemesis.Nemesis
	// inFull: the run goes on past its time until the schedule, or a first
	// round of range movements, is dealt; closing timeUp says the time is up.
	inFull bool
	timeUp chan struct{}
}

// run is the body of Run between the meta line and the check.
func run(ctx context.Context, env Env, t *Test, nem runNemesis, mon *monitor, log *slog.Logger, out *Outcome, sw *stopwatch, tm *Timing, healed bool) error {
	var targets, spares []nemesis.Target
	if env != nil {
		targets, spares = env.Targets(), env.Spares()
	}
	// Faults an earlier run left (its process killed mid-run) are healed
	// and recorded before anything else touches the cluster; when this
	// process's previous run left it healed within this holding of its
	// lease (healed.go), the cluster only has to be healthy.
	if env != nil {
		hctx, cancel := context.WithTimeout(ctx, nemesis.HealBudget(len(spares) > 0, t.HealTimeout))
		var err error
		if healed {
			log.Debug("the cluster as this process's previous run left it, healed: waiting until it is healthy")
			if err = env.WaitHealthy(hctx); err != nil {
				err = fmt.Errorf("cluster not healthy: %w", err)
			}
		} else {
			err = HealLeftovers(hctx, env, mon, log)
		}
		cancel()
		if err != nil {
			return &SetupError{Recipe: "the cluster", Err: err, cluster: true}
		}
	}
	sw.lap(&tm.Leftovers)
	var wl clients
	var control nemesis.Clients
	if t.Workload == workload.ShapeRegister {
		setupMu.Lock()
		newReg, finalReg, closeFn, err := setupRegister(ctx, env, t)
		setupMu.Unlock()
		if err != nil {
			return &SetupError{Recipe: t.Recipe.Name, Err: err}
		}
		defer closeFn()
		ropts := []workload.Option{workload.WithClients(t.Clients), workload.WithLocks(t.LockNames()...),
			workload.WithSeed(t.Seed), workload.WithLogger(log)}
		if t.Deletes {
			ropts = append(ropts, workload.WithDeletes())
		}
		rw, err := workload.NewRegister(newReg, mon, ropts...)
		if err != nil {
			return fmt.Errorf("runner: %w", err)
		}
		wl = registerClients{rw, finalReg}
		control = rw.Control()
	} else {
		if !t.Recipe.ownSetupTurn {
			setupMu.Lock()
		}
		newLock, res, closeFn, err := t.Recipe.Setup(ctx, env, t)
		if !t.Recipe.ownSetupTurn {
			setupMu.Unlock()
		}
		if err != nil {
			return &SetupError{Recipe: t.Recipe.Name, Err: err}
		}
		defer closeFn()
		wopts := []workload.Option{workload.WithShape(t.Workload), workload.WithClients(t.Clients), workload.WithLocks(t.LockNames()...),
			workload.WithSeed(t.Seed), workload.WithLogger(log), workload.WithAcquireTimeout(t.AcquireTimeout)}
		if t.RetireStuck {
			wopts = append(wopts, workload.WithRetireStuckLocks())
		}
		lw, err := workload.New(newLock, res, mon, wopts...)
		if err != nil {
			return fmt.Errorf("runner: %w", err)
		}
		wl = lw
		control = lw.Control()
	}
	// A schedule whose steps follow windows or wait for range movements
	// runs on past Time until it is dealt (Test.Schedule), and a drawn run
	// of range movements until each of its kinds was dealt once, within
	// the same cap.
	if err := nem.Attach(mon, control, log); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	timeUp, inFull := nem.timeUp, nem.inFull

	sw.lap(&tm.Setup)
	start := sw.last
	runCtx, cancel := context.WithTimeout(ctx, t.Time)
	defer cancel()
	context.AfterFunc(runCtx, func() { close(timeUp) })
	nemCtx, nemCancel := runCtx, cancel
	if inFull {
		nemCtx, nemCancel = context.WithTimeout(ctx, t.Time+nemesis.FollowWait)
		defer nemCancel()
	}
	// The clients run on through the heal and the quiet phase: they stop
	// after it, so that the recipe shows it recovers.
	clientCtx, stopClients := context.WithCancel(context.WithoutCancel(ctx))
	defer stopClients()

	var wg sync.WaitGroup
	var wlErr, nemErr error
	wg.Go(func() { wlErr = wl.Run(clientCtx) })
	nemDone := make(chan struct{})
	go func() { defer close(nemDone); nemErr = nem.Run(nemCtx) }()
	progDone := make(chan struct{})
	progStop := make(chan struct{})
	if t.Progress != nil {
		go func() { defer close(progDone); progress(t.Progress, start, mon, nem.Nemesis, progStop) }()
	} else {
		close(progDone)
	}

	select {
	case <-runCtx.Done():
	case <-mon.store.done:
		// A store that can take no more stops the run at once: the space
		// set aside holds the lines of the stop and the heal.
		log.Error("the store can take no more: stopping the clients and faults", "err", mon.store.cause())
		cancel()
		nemCancel()
	}
	deadline := time.Now()
	openAtDeadline := nem.Active()
	// A drawn run's windows open at the time end with it; a schedule's
	// are waited for.
	if undealt := nem.Undealt(); inFull && ctx.Err() == nil && (undealt > 0 || t.Schedule != nil && len(openAtDeadline) > 0) {
		what := "the schedule is dealt in full (its steps follow windows or wait for range movements): running on until it is dealt (%d steps"
		if t.Schedule == nil {
			what = "a drawn run of range movements (or --every-kind) deals each of its kinds once: running on until it has (%d kinds"
		}
		t.say(fmt.Sprintf(what+" to deal, open: %s; at most %s more)", undealt, strings.Join(openAtDeadline, ","), nemesis.FollowWait))
	}
	<-nemDone
	faultsEnd := time.Now()
	var errs []error
	if nemErr != nil {
		log.Warn("nemesis errors", "err", nemErr)
	}
	// Heal whatever the nemesis left, even when interrupted.
	hctx, hcancel := context.WithTimeout(context.WithoutCancel(ctx), nemesis.HealBudget(nemesis.AnyMembershipKind(t.Nemesis), t.HealTimeout))
	if len(t.Nemesis) > 0 {
		log.Info("healing")
		if err := nem.Heal(hctx); err != nil {
			errs = append(errs, fmt.Errorf("runner: heal: %w", err))
		}
	}
	if env != nil && len(targets) > 0 && nemesis.AnyNodeKind(t.Nemesis) {
		if err := env.WaitHealthy(hctx); err != nil {
			errs = append(errs, fmt.Errorf("runner: cluster not healthy after heal: %w", err))
		}
	}
	hcancel()
	healEnd := time.Now()
	if ctx.Err() == nil && mon.store.cause() == nil {
		log.Info("quiet phase", "for", t.Quiet)
		sleepCtx(ctx, t.Quiet)
	}
	quietEnd := time.Now()
	stopClients()
	wg.Wait()
	close(progStop)
	<-progDone
	if wlErr != nil {
		errs = append(errs, fmt.Errorf("runner: workload: %w", wlErr))
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer rcancel()
	log.Info("final reads")
	if err := wl.FinalReads(rctx); err != nil {
		errs = append(errs, fmt.Errorf("runner: %w", err))
	}
	end := time.Now()
	out.Faults = mon.faults()
	out.NeverDealt = history.NeverDealt(t.Nemesis, out.Faults)
	if len(out.NeverDealt) > 0 {
		log.Warn("fault kinds requested and never dealt (a longer --time or a shorter --nemesis list deals them)",
			"kinds", strings.Join(out.NeverDealt, ","), "dealt", out.Faults)
	}
	tm.Run, tm.Heal, tm.Quiet, tm.Final = faultsEnd.Sub(start), healEnd.Sub(faultsEnd), quietEnd.Sub(healEnd), end.Sub(quietEnd)
	sw.last = end
	out.Phases = history.RunPhases{
		RequestedMS: t.Time.Milliseconds(), FaultsMS: faultsEnd.Sub(start).Milliseconds(),
		HealMS: healEnd.Sub(faultsEnd).Milliseconds(), QuietMS: quietEnd.Sub(healEnd).Milliseconds(),
		FinalMS: end.Sub(quietEnd).Milliseconds(), TotalMS: end.Sub(start).Milliseconds(),
	}
	// A window still open at the deadline is what makes a run outlast
	// --time (its close, a restart, can take a minute): say which.
	if faultsEnd.Sub(deadline) > time.Second {
		out.Phases.Overrun = openAtDeadline
	}
	if t.Schedule != nil {
		if inFull && faultsEnd.After(deadline) {
			out.Phases.ScheduleWaitMS = faultsEnd.Sub(deadline).Milliseconds()
		}
		out.Phases.Undealt = nem.Undealt()
		if out.Phases.Undealt > 0 {
			log.Warn("schedule steps never dealt (the run's cap came first, their start failed, or the window they follow never reached its phase)",
				"undealt", out.Phases.Undealt, "of", len(t.Schedule.Steps))
		}
	}
	if _, err := mon.Append(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.FPhases, Value: mustJSON(out.Phases)}); err != nil {
		errs = append(errs, fmt.Errorf("runner: record phases: %w", err))
	}
	return errors.Join(errs...)
}

// clients are the workload's clients as the run drives them: the lock
// workload, or the register's.
type clients interface {
	Run(ctx context.Context) error
	FinalReads(ctx context.Context) error
}

// registerClients reads the register's final values on the shared session.
type registerClients struct {
	*workload.RegisterWorkload
	final workload.Register
}

func (r registerClients) FinalReads(ctx context.Context) error {
	return r.RegisterWorkload.FinalReads(ctx, r.final)
}

// say tells the user one line: on the progress writer, else in the log.
func (t *Test) say(line string) {
	if t.Progress != nil {
		fmt.Fprintf(t.Progress, "lockcheck run: %s\n", line)
		return
	}
	t.Log.Warn(line)
}

// TakeCluster takes env's cluster for this process (exclusive.Take),
// waiting while another holds it unless noWait; say is told the one line
// naming the holder. A nil env, or one whose cluster no other process can
// reach, needs no lease.
func TakeCluster(ctx context.Context, env Env, noWait bool, say func(string)) (*exclusive.Lease, error) {
	if env == nil || env.Lease() == nil {
		return nil, nil
	}
	return exclusive.Take(ctx, env.Lease(), exclusive.NoWait(noWait), exclusive.Say(say))
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// progress writes a line about every second until stop is closed.
func progress(w io.Writer, start time.Time, mon *monitor, nem *nemesis.Nemesis, stop <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, lastT := mon.ops.Load(), time.Now()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			ops := mon.ops.Load()
			rate := float64(ops-last) / now.Sub(lastT).Seconds()
			last, lastT = ops, now
			faults := "-"
			if a := nem.Active(); len(a) > 0 {
				faults = strings.Join(a, ",")
			}
			ok, fail, info := mon.counts()
			fmt.Fprintf(w, "%6.0fs  %6.0f ops/s  ok %d fail %d info %d  faults %s  overlaps %d\n",
				now.Sub(start).Seconds(), rate, ok, fail, info, faults, mon.overlaps.Load())
		}
	}
}

// teeHandler sends records to two handlers.
type teeHandler struct{ a, b slog.Handler }

func (h teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.a.Enabled(ctx, l) || h.b.Enabled(ctx, l)
}

func (h teeHandler) Handle(ctx context.Context, r slog.Record) error {
	var errs []error
	if h.a.Enabled(ctx, r.Level) {
		errs = append(errs, h.a.Handle(ctx, r.Clone()))
	}
	if h.b.Enabled(ctx, r.Level) {
		errs = append(errs, h.b.Handle(ctx, r))
	}
	return errors.Join(errs...)
}

func (h teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return teeHandler{h.a.WithAttrs(as), h.b.WithAttrs(as)}
}

func (h teeHandler) WithGroup(name string) slog.Handler {
	return teeHandler{h.a.WithGroup(name), h.b.WithGroup(name)}
}

// newNemesis makes the run's one nemesis from t's Spec and schedule and
// env's nodes: the refusals of nemesis.New (a kind a node cannot serve, a
// schedule's node the cluster lacks, an aimed kind without pins, a
// membership kind without a spare, dc-partition on one data centre, a skew
// out of bounds) come before the run. The run attaches its recorder,
// clients and logger (Nemesis.Attach). inFull: the run goes on past its
// time until the schedule, or a first round of range movements, is dealt
// (closing timeUp says the time is up).
func (t *Test) newNemesis(env Env, timeUp <-chan struct{}) (nem *nemesis.Nemesis, inFull bool, err error) {
	var targets, spares []nemesis.Target
	gateway := ""
	if env != nil {
		targets, spares, gateway = env.Targets(), env.Spares(), env.GatewayIP()
	}
	var opts []nemesis.Option
	if t.Schedule != nil {
		if t.EveryKind {
			return nil, false, errors.New("--every-kind: a schedule deals its own steps, not drawn kinds")
		}
		opts, inFull = []nemesis.Option{nemesis.WithSchedule(*t.Schedule)}, t.Schedule.DealtInFull()
	} else {
		opts, inFull = []nemesis.Option{nemesis.WithKinds(t.Nemesis...)}, nemesis.MovesRing(t.Nemesis) || t.EveryKind && len(t.Nemesis) > 0
		if inFull {
			opts = append(opts, nemesis.WithFirstRound(timeUp))
		}
	}
	// The clients come with Attach (the register's too: they serve
	// client-hold; Validate refused the kinds that need a lock's).
	opts = append(opts, nemesis.WithClientsLater())
	if t.SkewMax > 0 {
		opts = append(opts, nemesis.WithClientSkew(t.SkewMin, t.SkewMax), nemesis.WithCoordSkew(t.SkewMin, t.SkewMax))
	}
	if b, set, err := t.netBounds(); set && err == nil {
		opts = append(opts, nemesis.WithNetBounds(b))
	}
	if s, err := t.slowness(); err == nil && s != (nemesis.Slowness{}) {
		opts = append(opts, nemesis.WithSlowness(s))
	}
	opts = append(opts, nemesis.WithSeed(t.Seed), nemesis.WithInterval(t.Interval), nemesis.WithGateway(gateway),
		nemesis.WithClientPauseExtra(t.PauseExtra), nemesis.WithClientKill(t.KillRestart, t.KillTarget), nemesis.WithClientSkewAhead(t.SkewAhead), nemesis.WithPins(t.pins),
		nemesis.WithLeaseTTL(t.TTL), nemesis.WithSpares(spares), nemesis.WithAimWrite(t.AimWrite))
	nem, err = nemesis.New(targets, nil, opts...)
	return nem, inFull, err
}

// netBounds are the shaping kinds' bounds the Spec sets (set: any of
// --net-delay, --net-jitter, --net-rate), defaults filling the others.
func (t *Test) netBounds() (b nemesis.NetBounds, set bool, err error) {
	if t.NetDelay == "" && t.NetJitter == "" && t.NetRate == "" {
		return nemesis.NetBounds{}, false, nil
	}
	b, err = nemesis.ParseNetBounds(t.NetDelay, t.NetJitter, t.NetRate)
	return b, true, err
}

// slowness are the slowness kinds' bounds the Spec sets (zero pairs: the
// nemesis's defaults).
func (t *Test) slowness() (nemesis.Slowness, error) {
	return nemesis.ParseSlowness(t.SlowCPU, t.Stall, t.StallEvery, t.DiskLatency)
}
