// Package lockcmd drives a lock written in any language: a plug-in command
// (`lockcheck run --lock-cmd`) started through `sh -c` once per client
// process, speaking JSON lines over its stdin and stdout, as Jepsen's
// Maelstrom does. The protocol is in protocol.go and docs/plugin.md.
//
// A plug-in's reply that is not valid JSON, carries another id, or does not
// come in time makes that operation's outcome unknown: the process is killed
// (its whole process group) and the next operation starts a new one. The
// workload moves the client to a new process number at every unknown
// outcome, so the new process is a new process of the history too.
package lockcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockcheck/lockcheck/workload"
)

// Env is what a plug-in is told about the run, in its environment.
type Env struct {
	Hosts    []string      // LOCKCHECK_HOSTS: host:port contact points
	Keyspace string        // LOCKCHECK_KEYSPACE
	TTL      time.Duration // LOCKCHECK_TTL_MS: the run's --ttl
	// DC is LOCKCHECK_DC: the data centre of the contact points (drivers
	// that route by data centre need its name); empty when unknown.
	DC string
	// Pins are the clients' coordinators (host:port by client number) when
	// the run pins its clients (run --pin-clients): client i is told
	// LOCKCHECK_PIN=Pins[i] and must send every request there, so that
	// the coord-* faults reach the coordinator it uses. Empty: unpinned.
	Pins []string
}

// Option configures a Driver.
type Option func(*config)

type config struct {
	grace        time.Duration
	setupTimeout time.Duration
	opTimeout    time.Duration
	stopTimeout  time.Duration
	faketime     string
	clockDir     string
	log          *slog.Logger
}

// WithGrace is how long past an operation's deadline lockcheck waits for
// the reply before it counts the outcome unknown and replaces the process
// (default 2s). Requests carry the deadline as timeout_ms.
func WithGrace(d time.Duration) Option { return func(c *config) { c.grace = d } }

// WithSetupTimeout bounds a process's start and its setup (default 2m: a
// JVM and a driver's first connection are slow on a loaded machine).
func WithSetupTimeout(d time.Duration) Option { return func(c *config) { c.setupTimeout = d } }

// WithOpTimeout bounds an operation whose context has no deadline (default 30s).
func WithOpTimeout(d time.Duration) Option { return func(c *config) { c.opTimeout = d } }

// WithFaketime runs every process under libfaketime (lib, the path of
// libfaketimeMT.so.1) with a clock offset file per client in dir, which
// SetClockOffset rewrites during the run (the client-clock fault).
func WithFaketime(lib, dir string) Option {
	return func(c *config) { c.faketime, c.clockDir = lib, dir }
}

// WithLogger sets the logger; the plug-ins' stderr lines go to it.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// Driver starts the processes of one plug-in command.
type Driver struct {
	command string
	env     Env
	cfg     config
}

// New returns a driver of command. It starts nothing.
func New(command string, env Env, opts ...Option) (*Driver, error) {
	cfg := config{grace: 2 * time.Second, setupTimeout: 2 * time.Minute, opTimeout: 30 * time.Second,
		stopTimeout: 3 * time.Second, log: slog.Default()}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case strings.TrimSpace(command) == "":
		return nil, errors.New("lockcmd: empty command")
	case cfg.grace < 0 || cfg.setupTimeout <= 0 || cfg.opTimeout <= 0:
		return nil, errors.New("lockcmd: time-outs must be positive")
	}
	if cfg.faketime != "" {
		if _, err := os.Stat(cfg.faketime); err != nil {
			return nil, fmt.Errorf("lockcmd: libfaketime: %w", err)
		}
		if cfg.clockDir == "" {
			return nil, errors.New("lockcmd: libfaketime needs a directory for the clock files")
		}
	}
	return &Driver{command: command, env: env, cfg: cfg}, nil
}

// FindFaketime returns the path of libfaketimeMT.so.1 (Debian's libfaketime
// package), or an error saying what to install. The MT variant is the one
// a multi-threaded runtime (a JVM, a driver's I/O threads) needs.
func FindFaketime() (string, error) {
	for _, pat := range []string{"/usr/lib/*/faketime/libfaketimeMT.so.1", "/usr/lib/faketime/libfaketimeMT.so.1",
		"/usr/local/lib/faketime/libfaketimeMT.so.1"} {
		if m, _ := filepath.Glob(pat); len(m) > 0 {
			return m[0], nil
		}
	}
	return "", errors.New("libfaketimeMT.so.1 not found: install libfaketime (Debian: apt-get install libfaketime)")
}

// Start starts client's process and sends it setup. An error means the
// plug-in cannot run: it cannot start, or its setup failed.
func (d *Driver) Start(ctx context.Context, client int) (*Lock, error) {
	l := &Lock{d: d, client: client}
	if d.cfg.faketime != "" {
		l.clockFile = filepath.Join(d.cfg.clockDir, fmt.Sprintf("faketime-c%d", client))
		if err := l.SetClockOffset(0); err != nil {
			return nil, err
		}
	}
	p, err := l.start(ctx)
	if err != nil {
		return nil, err
	}
	l.p = p
	return l, nil
}

// Lock is one client's plug-in process, as a workload.Lock. Its operations
// are meant to be called one at a time (a client's loop); PauseProcess and
// SetClockOffset may be called from another goroutine.
type Lock struct {
	d         *Driver
	client    int
	clockFile string

	op  sync.Mutex // one request at a time
	mu  sync.Mutex // guards p and closed
	p   *proc      // nil after a kill, until the next operation starts one
	gen int        // processes started
	// closed: Close ran; no new process starts.
	closed bool
	// renews: the last setup's reply said "renew":true.
	renews bool
}

var _ interface {
	workload.Lock
	workload.Renewer
	workload.RenewChecker
	workload.ProcessPauser
	workload.ProcessKiller
	workload.ClockSetter
} = (*Lock)(nil)

// proc is one running plug-in process.
type proc struct {
	cmd    *exec.Cmd
	pid    int
	stdin  io.WriteCloser
	lines  chan []byte // stdout lines; closed at EOF or on a line too long
	tooBig chan struct{}
	done   chan struct{} // closed when the process was waited for
	err    error         // its exit status, once done

	mu         sync.Mutex
	lastStderr string
	nextID     int64
}

// maxLine bounds a reply line.
const maxLine = 1 << 20

func (l *Lock) start(ctx context.Context) (*proc, error) {
	d := l.d
	cmd := exec.Command("sh", "-c", d.command)
	cmd.Env = append(os.Environ(),
		"LOCKCHECK_HOSTS="+strings.Join(d.env.Hosts, ","),
		"LOCKCHECK_KEYSPACE="+d.env.Keyspace,
		"LOCKCHECK_CLIENT="+strconv.Itoa(l.client),
		"LOCKCHECK_TTL_MS="+strconv.FormatInt(d.env.TTL.Milliseconds(), 10),
		"LOCKCHECK_DC="+d.env.DC,
	)
	if l.client < len(d.env.Pins) {
		cmd.Env = append(cmd.Env, "LOCKCHECK_PIN="+d.env.Pins[l.client])
	}
	if d.cfg.faketime != "" {
		// The settings that keep a JVM sane under libfaketime (design
		// notes, Clocks): only the wall clock moves, never the monotonic one.
		cmd.Env = append(cmd.Env, "LD_PRELOAD="+d.cfg.faketime, "FAKETIME_TIMESTAMP_FILE="+l.clockFile,
			"FAKETIME_NO_CACHE=1", "FAKETIME_DONT_FAKE_MONOTONIC=1", "FAKETIME_FORCE_MONOTONIC_FIX=0")
	}
	// A process group of its own: sh's children are stopped, continued and
	// killed with it. Pdeathsig: a harness killed with SIGKILL takes its
	// plug-ins with it (a plug-in left running would hold a lock the next
	// run contends for); their children see their stdin close.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("plug-in: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("plug-in: %w", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("plug-in: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("plug-in: start %q: %w", d.command, err)
	}
	p := &proc{cmd: cmd, pid: cmd.Process.Pid, stdin: stdin, lines: make(chan []byte, 1),
		tooBig: make(chan struct{}), done: make(chan struct{})}
	l.gen++
	log := d.cfg.log.With("client", l.client, "pid", p.pid)
	log.Info("plug-in started", "command", d.command, "process", l.gen, "faketime", l.clockFile)
	var readers sync.WaitGroup
	readers.Go(func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), maxLine)
		for sc.Scan() {
			p.lines <- append([]byte(nil), sc.Bytes()...)
		}
		if errors.Is(sc.Err(), bufio.ErrTooLong) {
			close(p.tooBig)
		}
		close(p.lines)
		_, _ = io.Copy(io.Discard, stdout) // let the process write on until it is killed
	})
	readers.Go(func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), maxLine)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.lastStderr = line
			p.mu.Unlock()
			log.Info("plug-in stderr", "line", line)
		}
		_, _ = io.Copy(io.Discard, stderr)
	})
	go func() {
		readers.Wait() // Wait closes the pipes: read them to the end first
		p.err = cmd.Wait()
		close(p.done)
	}()

	sctx, cancel := context.WithTimeout(ctx, d.cfg.setupTimeout)
	defer cancel()
	r, err := p.call(sctx, request{Op: "setup"}, d.cfg.grace)
	if err == nil && r.Type != "ok" {
		err = fmt.Errorf("setup answered %s: %s", r.Type, r.Error)
	}
	if err != nil {
		l.kill(p)
		return nil, fmt.Errorf("plug-in %q (client %d): %w", d.command, l.client, p.describe(err))
	}
	l.mu.Lock()
	l.renews = r.Renew
	l.mu.Unlock()
	return p, nil
}

// describe adds the exit status and the last stderr line to err, when the
// process has ended: what a user needs to see why a plug-in would not run.
func (p *proc) describe(err error) error {
	select {
	case <-p.done:
	case <-time.After(time.Second):
	}
	var extra []string
	select {
	case <-p.done:
		if p.err != nil {
			extra = append(extra, p.err.Error())
		}
	default:
	}
	p.mu.Lock()
	if p.lastStderr != "" {
		extra = append(extra, "stderr: "+p.lastStderr)
	}
	p.mu.Unlock()
	if len(extra) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(extra, "; "))
}

// errProtocol marks a reply that breaks the protocol (or none at all).
var errProtocol = errors.New("plug-in protocol")

// call sends req and waits for its reply until ctx's deadline plus grace.
// A reply that breaks the protocol (or none in time) is an error wrapping
// errProtocol; the caller kills the process.
func (p *proc) call(ctx context.Context, req request, grace time.Duration) (reply, error) {
	p.mu.Lock()
	p.nextID++
	req.ID = p.nextID
	p.mu.Unlock()
	deadline, ok := ctx.Deadline()
	if !ok {
		return reply{}, errors.New("lockcmd: call without a deadline")
	}
	req.TimeoutMS = max(time.Until(deadline).Milliseconds(), 1)
	line, err := json.Marshal(req)
	if err != nil {
		return reply{}, err
	}
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		return reply{}, fmt.Errorf("%w: write request: %v", errProtocol, err)
	}
	t := time.NewTimer(time.Until(deadline) + grace)
	defer t.Stop()
	select {
	case b, ok := <-p.lines:
		if !ok {
			select {
			case <-p.tooBig:
				return reply{}, fmt.Errorf("%w: reply to %s %d longer than %d bytes", errProtocol, req.Op, req.ID, maxLine)
			default:
			}
			return reply{}, fmt.Errorf("%w: plug-in exited without answering %s %d", errProtocol, req.Op, req.ID)
		}
		r, err := parseReply(b, req)
		if err != nil {
			return reply{}, fmt.Errorf("%w: %v", errProtocol, err)
		}
		return r, nil
	case <-t.C:
		return reply{}, fmt.Errorf("%w: no reply to %s %d within %v", errProtocol, req.Op, req.ID,
			(time.Duration(req.TimeoutMS)*time.Millisecond + grace).Round(time.Millisecond))
	}
}

// kill ends p's whole process group and waits for it.
func (l *Lock) kill(p *proc) {
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		l.d.cfg.log.Warn("plug-in not reaped after SIGKILL", "client", l.client, "pid", p.pid)
	}
}

// current returns the running process, starting one when the last was
// killed.
func (l *Lock) current(ctx context.Context) (*proc, error) {
	l.mu.Lock()
	p, closed := l.p, l.closed
	l.mu.Unlock()
	if closed {
		return nil, errors.New("plug-in closed")
	}
	if p != nil {
		return p, nil
	}
	p, err := l.start(ctx)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.kill(p)
		return nil, errors.New("plug-in closed")
	}
	l.p = p
	return p, nil
}

// do runs one operation. notDone is the sentinel of a definite failure.
func (l *Lock) do(ctx context.Context, req request, notDone error) (reply, error) {
	l.op.Lock()
	defer l.op.Unlock()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.d.cfg.opTimeout)
		defer cancel()
	}
	p, err := l.current(ctx)
	if err != nil {
		// Nothing was sent: the operation certainly did not happen.
		return reply{}, fmt.Errorf("%s %q: %v: %w", req.Op, req.Lock, err, notDone)
	}
	r, err := p.call(ctx, req, l.d.cfg.grace)
	if err != nil {
		l.d.cfg.log.Warn("plug-in replaced", "client", l.client, "pid", p.pid, "err", err)
		l.mu.Lock()
		l.p = nil
		l.mu.Unlock()
		l.kill(p)
		return reply{}, fmt.Errorf("%s %q: %v: %w", req.Op, req.Lock, err, workload.ErrUnknown)
	}
	switch r.Type {
	case "fail":
		return r, fmt.Errorf("%s %q: %s: %w", req.Op, req.Lock, r.Error, notDone)
	case "info":
		return r, fmt.Errorf("%s %q: %s: %w", req.Op, req.Lock, r.Error, workload.ErrUnknown)
	}
	return r, nil
}

// Acquire sends an acquire and waits for its reply.
func (l *Lock) Acquire(ctx context.Context, name, owner string) (workload.Grant, error) {
	start := time.Now()
	r, err := l.do(ctx, request{Op: "acquire", Lock: name, Owner: owner}, workload.ErrNotAcquired)
	if err != nil {
		return workload.Grant{}, err
	}
	g := workload.Grant{Lock: name, Owner: owner}
	if r.Token != nil {
		g.Token = *r.Token
	}
	if r.LeaseMS != nil {
		g.Lease = time.Duration(*r.LeaseMS) * time.Millisecond
		g.Deadline = start.Add(g.Lease) // start carries a monotonic reading
	}
	return g, nil
}

// Renew sends a renew of g (a plug-in whose setup said "renew":true). The
// grant returned keeps g's token; its lease is the reply's lease_ms, or
// g's lease when the reply has none, counted from the renew's start. A
// fail is ErrNotHeld: the holder is no longer the holder.
func (l *Lock) Renew(ctx context.Context, g workload.Grant) (workload.Grant, error) {
	if !l.CanRenew() {
		return g, fmt.Errorf("renew %q: the plug-in's setup did not say \"renew\":true: %w", g.Lock, workload.ErrNotHeld)
	}
	start := time.Now()
	r, err := l.do(ctx, request{Op: "renew", Lock: g.Lock, Owner: g.Owner, Token: g.Token}, workload.ErrNotHeld)
	if err != nil {
		return g, err
	}
	if r.LeaseMS != nil {
		g.Lease = time.Duration(*r.LeaseMS) * time.Millisecond
	}
	if g.Lease > 0 {
		g.Deadline = start.Add(g.Lease)
	}
	return g, nil
}

// CanRenew tells whether the plug-in answers renew requests: its last
// setup said "renew":true. A leader whose lock cannot renew re-acquires.
func (l *Lock) CanRenew() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renews
}

// Release sends a release (with the grant's token, if any) and waits for
// its reply.
func (l *Lock) Release(ctx context.Context, g workload.Grant) error {
	_, err := l.do(ctx, request{Op: "release", Lock: g.Lock, Owner: g.Owner, Token: g.Token}, workload.ErrNotHeld)
	return err
}

// PauseProcess stops the process group with SIGSTOP; resume continues it.
func (l *Lock) PauseProcess() (func() error, error) {
	l.mu.Lock()
	p := l.p
	l.mu.Unlock()
	if p == nil {
		return nil, errors.New("plug-in: no process to pause")
	}
	if err := syscall.Kill(-p.pid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("plug-in: SIGSTOP %d: %w", p.pid, err)
	}
	l.d.cfg.log.Info("plug-in stopped", "client", l.client, "pid", p.pid)
	return func() error {
		if err := syscall.Kill(-p.pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("plug-in: SIGCONT %d: %w", p.pid, err)
		}
		l.d.cfg.log.Info("plug-in continued", "client", l.client, "pid", p.pid)
		return nil
	}, nil
}

// KillProcess kills the running process, its whole process group, with
// SIGKILL (client-kill): an operation in flight gets no answer (its
// outcome is unknown), and no new process starts until RestartProcess or
// the next operation.
func (l *Lock) KillProcess() error {
	l.mu.Lock()
	p := l.p
	l.p = nil
	l.mu.Unlock()
	if p == nil {
		return errors.New("plug-in: no process to kill")
	}
	l.d.cfg.log.Info("plug-in killed (client-kill)", "client", l.client, "pid", p.pid)
	l.kill(p)
	return nil
}

// RestartProcess starts a fresh process (and its setup) when none runs: the
// restarted application instance after a client-kill. It waits for an
// operation in flight.
func (l *Lock) RestartProcess(ctx context.Context) error {
	l.op.Lock()
	defer l.op.Unlock()
	_, err := l.current(ctx)
	return err
}

// SetClockOffset moves the wall clock the client's processes see (this one
// and those that replace it) by d from the machine's. It needs WithFaketime.
func (l *Lock) SetClockOffset(d time.Duration) error {
	if l.clockFile == "" {
		return errors.New("plug-in: client clock needs libfaketime (lockcmd.WithFaketime)")
	}
	// Written aside and renamed: with FAKETIME_NO_CACHE libfaketime rereads
	// the file at every clock call and must never see it half written.
	tmp := l.clockFile + ".tmp"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%+.6f\n", d.Seconds()), 0o644); err != nil {
		return fmt.Errorf("plug-in clock: %w", err)
	}
	if err := os.Rename(tmp, l.clockFile); err != nil {
		return fmt.Errorf("plug-in clock: %w", err)
	}
	l.d.cfg.log.Info("plug-in clock", "client", l.client, "offset", d)
	return nil
}

// Close ends the process: stdin is closed (a plug-in exits at end of
// input), and what still runs after a short wait is killed, the whole
// process group, so that nothing is left running.
func (l *Lock) Close() error {
	l.mu.Lock()
	p := l.p
	l.p, l.closed = nil, true
	l.mu.Unlock()
	if p == nil {
		return nil
	}
	_ = syscall.Kill(-p.pid, syscall.SIGCONT) // a stopped process cannot read its EOF
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(l.d.cfg.stopTimeout):
	}
	l.kill(p) // the group: children that outlived sh
	return nil
}

// Process is the pid of the running process (0 when none), for tests and logs.
func (l *Lock) Process() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p == nil {
		return 0
	}
	return l.p.pid
}
