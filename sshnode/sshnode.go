// Package sshnode is a Cassandra node of a user's own cluster, reached over
// SSH (golang.org/x/crypto/ssh, one connection per node): it implements
// nemesis.Node, so that every node fault kind runs on real hosts as on the
// Docker cluster. It touches only the host it was dialled to, and only the
// Cassandra JVM (found by its main class), lockcheck's own iptables chains
// and, behind an explicit option, the host's clock.
package sshnode

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/faultcap"
	"github.com/lockcheck/lockcheck/netshape"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Config is how to reach and drive the nodes.
type Config struct {
	User    string // default "root"; any other user runs commands with `sudo -n`
	KeyFile string // private key (required)
	Port    int    // default 22
	// KnownHosts is the known_hosts file host keys are checked against
	// (default ~/.ssh/known_hosts). InsecureIgnoreHostKey skips the check.
	KnownHosts            string
	InsecureIgnoreHostKey bool
	// StartCmd starts Cassandra again after a kill, e.g. "systemctl start
	// cassandra"; run through sh on the node. Without it kill is refused.
	StartCmd string
	// ClockStep lets the clock fault step the host's real clock (date -s)
	// when the JVM does not run under libfaketime. Risky: every process of
	// the host sees the step; the reset steps it back.
	ClockStep bool
	CQLPort   int // where a restarted node serves CQL (default 9042)
	Log       *slog.Logger
}

// Node is one host over one SSH connection.
type Node struct {
	Name, Host string
	cfg        Config
	dial       func(ctx context.Context) (*ssh.Client, error)

	mu sync.Mutex
	c  *ssh.Client

	capMu sync.Mutex
	caps  []faultcap.Capability
	// shaping is what Check's probe found the kernel offers to shape
	// links (netem, htb); a host gets no shaper binary, so no netem, no
	// net-delay.
	shaping netshape.Probed // what Check found the host can do (nil: not probed)
}

// jvmPattern finds the Cassandra JVM with pgrep -f. The brackets keep the
// pattern from matching the shell (and sudo) that run pgrep.
const jvmPattern = "[o]rg.apache.cassandra.service.CassandraDaemon"

// stepFile records the offset a clock step left, so that a reset, even by
// a later process, steps the clock back.
const stepFile = "/var/tmp/lockcheck-clock-step"

func (c *Config) fill() error {
	if c.User == "" {
		c.User = "root"
	}
	if c.Port == 0 {
		c.Port = 22
	}
	if c.CQLPort == 0 {
		c.CQLPort = 9042
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.KeyFile == "" {
		return errors.New("--ssh-key: a private key file is required for node faults")
	}
	if c.KnownHosts == "" && !c.InsecureIgnoreHostKey {
		home, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("known_hosts: %w", err)
		}
		c.KnownHosts = filepath.Join(home, ".ssh", "known_hosts")
	}
	return nil
}

// Dialer holds what every connection shares: the key, the known hosts.
type Dialer struct {
	cfg      Config
	cc       ssh.ClientConfig
	callback ssh.HostKeyCallback // nil: host keys not checked
}

// NewDialer reads the key and the known hosts once for every host.
func NewDialer(cfg Config) (*Dialer, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	pem, err := os.ReadFile(cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("--ssh-key: %w", err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		return nil, fmt.Errorf("--ssh-key %s: %w", cfg.KeyFile, err)
	}
	d := &Dialer{cfg: cfg, cc: ssh.ClientConfig{User: cfg.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second}}
	if !cfg.InsecureIgnoreHostKey {
		if d.callback, err = knownhosts.New(cfg.KnownHosts); err != nil {
			return nil, fmt.Errorf("known hosts (or --ssh-insecure-ignore-host-key): %w", err)
		}
		d.cc.HostKeyCallback = d.callback
	}
	return d, nil
}

// probeKey is no real key: checking it against known_hosts makes the
// callback list the keys it knows for a host.
type probeKey struct{}

func (probeKey) Type() string                        { return "lockcheck-probe" }
func (probeKey) Marshal() []byte                     { return []byte("lockcheck-probe") }
func (probeKey) Verify([]byte, *ssh.Signature) error { return errors.New("probe") }

// hostKeyAlgorithms are the types of the keys known_hosts holds for addr:
// the handshake asks the host for one of those, not for its preferred type
// (a host with an ed25519 and an ecdsa key, known by one of them only).
func (d *Dialer) hostKeyAlgorithms(addr string, remote net.Addr) []string {
	var ke *knownhosts.KeyError
	if err := d.callback(addr, remote, probeKey{}); !errors.As(err, &ke) {
		return nil
	}
	var algs []string
	for _, k := range ke.Want {
		if t := k.Key.Type(); t == ssh.KeyAlgoRSA {
			algs = append(algs, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, t)
		} else {
			algs = append(algs, t)
		}
	}
	return algs
}

// Dial connects to host (a name or address, without port) and names the
// node name.
func (d *Dialer) Dial(ctx context.Context, name, host string) (*Node, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(d.cfg.Port))
	n := &Node{Name: name, Host: host, cfg: d.cfg}
	n.dial = func(ctx context.Context) (*ssh.Client, error) {
		nd := net.Dialer{Timeout: d.cc.Timeout}
		conn, err := nd.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		// The handshake too must end: a host that accepts and never
		// answers is an error, not a hang.
		conn.SetDeadline(time.Now().Add(d.cc.Timeout))
		defer conn.SetDeadline(time.Time{})
		cc := d.cc
		if d.callback != nil {
			cc.HostKeyAlgorithms = d.hostKeyAlgorithms(addr, conn.RemoteAddr())
		}
		sc, chans, reqs, err := ssh.NewClientConn(conn, addr, &cc)
		if err != nil {
			conn.Close()
			return nil, err
		}
		return ssh.NewClient(sc, chans, reqs), nil
	}
	var err error
	if n.c, err = n.dial(ctx); err != nil {
		return nil, fmt.Errorf("ssh %s@%s: %w", d.cfg.User, addr, err)
	}
	return n, nil
}

// Dial connects to one host (NewDialer, then Dialer.Dial).
func Dial(ctx context.Context, name, host string, cfg Config) (*Node, error) {
	d, err := NewDialer(cfg)
	if err != nil {
		return nil, err
	}
	return d.Dial(ctx, name, host)
}

// Close closes the connection.
func (n *Node) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.c == nil {
		return nil
	}
	err := n.c.Close()
	n.c = nil
	return err
}

// LocalIP is the harness's address as the node sees it (the source of the
// SSH connection): the clients' address for partitions of the clients.
func (n *Node) LocalIP() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.c == nil {
		return ""
	}
	if a, ok := n.c.LocalAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return ""
}

// ControlPort is the node's SSH port: lockcheck's iptables chains let it
// through, so that a partition never cuts the harness off from its heal.
func (n *Node) ControlPort() int { return n.cfg.Port }

func (n *Node) session(ctx context.Context) (*ssh.Session, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.c == nil {
		return nil, errors.New("connection closed")
	}
	s, err := n.c.NewSession()
	if err == nil {
		return s, nil
	}
	// The connection died (a host rebooted, a network blip): one redial.
	n.c.Close()
	c, derr := n.dial(ctx)
	if derr != nil {
		n.c = nil
		return nil, fmt.Errorf("%w; redial: %w", err, derr)
	}
	n.c = c
	return c.NewSession()
}

// quote quotes s for a POSIX shell.
func quote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// commandLine quotes cmd for the host's shell, as root (through sudo -n
// for another user).
func (n *Node) commandLine(cmd []string) string {
	q := make([]string, len(cmd))
	for i, a := range cmd {
		q[i] = quote(a)
	}
	line := strings.Join(q, " ")
	if n.cfg.User != "root" {
		line = "sudo -n " + line
	}
	return line
}

// Exec runs cmd on the host (as root, through sudo -n for another user) and
// returns its combined output; a non-zero exit status is an error.
func (n *Node) Exec(ctx context.Context, cmd ...string) (string, error) {
	line := n.commandLine(cmd)
	s, err := n.session(ctx)
	if err != nil {
		return "", fmt.Errorf("%s: ssh: %w", n.Name, err)
	}
	defer s.Close()
	// One buffer for both streams, which x/crypto/ssh copies in two
	// goroutines: its writes are serialised.
	var out lockedBuffer
	s.Stdout, s.Stderr = &out, &out
	done := make(chan error, 1)
	go func() { done <- s.Run(line) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = s.Signal(ssh.SIGKILL)
		s.Close()
		return out.String(), fmt.Errorf("%s: %q: %w", n.Name, cmd, ctx.Err())
	}
	if err != nil {
		return out.String(), fmt.Errorf("%s: %q: %w: %s", n.Name, cmd, err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// sh runs a script through sh -c.
func (n *Node) sh(ctx context.Context, script string) (string, error) {
	return n.Exec(ctx, "sh", "-c", script)
}

// jvm is the Cassandra JVM's pid, 0 when none runs.
func (n *Node) jvm(ctx context.Context) (int, error) {
	out, err := n.sh(ctx, "pgrep -f '"+jvmPattern+"' || true")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(out)
	switch len(f) {
	case 0:
		return 0, nil
	case 1:
		return strconv.Atoi(f[0])
	default:
		return 0, fmt.Errorf("%s: %d Cassandra JVMs (%s): lockcheck drives one per host", n.Name, len(f), strings.Join(f, " "))
	}
}

var signalRE = regexp.MustCompile(`^(STOP|CONT|KILL|TERM|HUP|INT|QUIT|USR1|USR2)$`)

// SignalJVM sends a signal to the Cassandra JVM only.
func (n *Node) SignalJVM(ctx context.Context, sig string) error {
	sig = strings.TrimPrefix(strings.ToUpper(sig), "SIG")
	if !signalRE.MatchString(sig) {
		return fmt.Errorf("signal %q: want STOP, CONT, KILL, TERM, HUP, INT, QUIT, USR1 or USR2", sig)
	}
	pid, err := n.jvm(ctx)
	if err != nil {
		return err
	}
	if pid == 0 {
		return fmt.Errorf("%s: no Cassandra JVM runs", n.Name)
	}
	_, err = n.Exec(ctx, "kill", "-s", sig, strconv.Itoa(pid))
	return err
}

// Pause stops the JVM (SIGSTOP): a host has no container to freeze.
func (n *Node) Pause(ctx context.Context) error { return n.SignalJVM(ctx, "STOP") }

// Unpause continues the JVM.
func (n *Node) Unpause(ctx context.Context) error { return n.SignalJVM(ctx, "CONT") }

// State is "running", "paused" (the JVM is stopped) or "exited" (no JVM),
// in the words of nemesis.Node.
func (n *Node) State(ctx context.Context) (string, error) {
	pid, err := n.jvm(ctx)
	if err != nil || pid == 0 {
		return "exited", err
	}
	out, err := n.Exec(ctx, "ps", "-o", "stat=", "-p", strconv.Itoa(pid))
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(strings.TrimSpace(out), "T") {
		return "paused", nil
	}
	return "running", nil
}

// Kill kills the JVM with SIGKILL and waits until it is gone.
func (n *Node) Kill(ctx context.Context) error {
	if n.cfg.StartCmd == "" {
		return fmt.Errorf("%s: kill needs a start command (--ssh-start-cmd) to restart Cassandra", n.Name)
	}
	if err := n.SignalJVM(ctx, "KILL"); err != nil {
		return err
	}
	return n.poll(ctx, func() (bool, error) {
		pid, err := n.jvm(ctx)
		return pid == 0, err
	})
}

// Restart runs the start command unless a JVM runs, and waits until the
// node accepts CQL connections.
func (n *Node) Restart(ctx context.Context) error {
	pid, err := n.jvm(ctx)
	if err != nil {
		return err
	}
	if pid == 0 {
		if n.cfg.StartCmd == "" {
			return fmt.Errorf("%s: Cassandra is not running and no start command (--ssh-start-cmd) was given", n.Name)
		}
		if _, err := n.sh(ctx, n.cfg.StartCmd); err != nil {
			return fmt.Errorf("restart %s: %w", n.Name, err)
		}
	}
	addr := net.JoinHostPort(n.Host, strconv.Itoa(n.cfg.CQLPort))
	return n.poll(ctx, func() (bool, error) {
		d := net.Dialer{Timeout: 2 * time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return false, nil
		}
		c.Close()
		return true, nil
	})
}

func (n *Node) poll(ctx context.Context, done func() (bool, error)) error {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", n.Name, ctx.Err())
		case <-t.C:
		}
	}
}

// faketimeFile is the offset file of the JVM's libfaketime
// (FAKETIME_TIMESTAMP_FILE in its environment), "" when it has none.
func (n *Node) faketimeFile(ctx context.Context) (string, error) {
	pid, err := n.jvm(ctx)
	if err != nil || pid == 0 {
		return "", err
	}
	out, err := n.sh(ctx, fmt.Sprintf("tr '\\0' '\\n' < /proc/%d/environ", pid))
	if err != nil {
		return "", err
	}
	return faketimeOf(out), nil
}

// faketimeOf reads a process environment (one VAR=value a line) for
// libfaketime's offset file.
func faketimeOf(environ string) string {
	preloaded, file := false, ""
	for _, l := range strings.Split(environ, "\n") {
		switch {
		case strings.HasPrefix(l, "LD_PRELOAD=") && strings.Contains(l, "faketime"):
			preloaded = true
		case strings.HasPrefix(l, "FAKETIME_TIMESTAMP_FILE="):
			file = strings.TrimPrefix(l, "FAKETIME_TIMESTAMP_FILE=")
		}
	}
	if !preloaded {
		return ""
	}
	return file
}

// offsetLine is libfaketime's relative offset format ("+1.500000").
func offsetLine(d time.Duration) string { return fmt.Sprintf("%+.6f", d.Seconds()) }

func parseOffset(s string) (time.Duration, error) {
	s = strings.TrimSuffix(strings.TrimSpace(s), "s")
	if s == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("clock offset %q: %w", s, err)
	}
	return time.Duration(f * float64(time.Second)).Round(time.Microsecond), nil
}

// SetClockOffset moves the JVM's wall clock by d through its libfaketime
// file, or, with ClockStep, steps the host's clock by the difference to the
// offset it last set (recorded on the host). 0 resets it.
func (n *Node) SetClockOffset(ctx context.Context, d time.Duration) error {
	file, err := n.faketimeFile(ctx)
	if err != nil {
		return err
	}
	if file != "" {
		_, err := n.sh(ctx, fmt.Sprintf("printf '%%s\\n' '%s' > %s.tmp && mv %s.tmp %s", offsetLine(d), quote(file), quote(file), quote(file)))
		return err
	}
	if !n.cfg.ClockStep {
		if d == 0 {
			return nil
		}
		return fmt.Errorf("%s: the Cassandra JVM does not run under libfaketime; --ssh-clock-step steps the host's clock instead (docs/hosts.md: the risk)", n.Name)
	}
	cur, err := n.stepped(ctx)
	if err != nil {
		return err
	}
	delta := (d - cur).Nanoseconds()
	// Step, then record: the host's clock and the record move together
	// within one script.
	script := fmt.Sprintf(`now=$(date +%%s%%N) && t=$((now + (%d))) && date -s "@$((t / 1000000000)).$(printf %%09d $((t %% 1000000000)))" >/dev/null && `, delta)
	if d == 0 {
		script += "rm -f " + stepFile
	} else {
		script += fmt.Sprintf("printf '%%s\\n' '%s' > %s", offsetLine(d), stepFile)
	}
	_, err = n.sh(ctx, script)
	return err
}

// stepped is the offset a clock step left on the host (0: none).
func (n *Node) stepped(ctx context.Context) (time.Duration, error) {
	out, err := n.sh(ctx, "cat "+stepFile+" 2>/dev/null || true")
	if err != nil {
		return 0, err
	}
	return parseOffset(out)
}

// ClockOffset is the offset SetClockOffset last set: the JVM's libfaketime
// file, else a clock step's record.
func (n *Node) ClockOffset(ctx context.Context) (time.Duration, error) {
	file, err := n.faketimeFile(ctx)
	if err != nil {
		return 0, err
	}
	if file == "" {
		return n.stepped(ctx)
	}
	out, err := n.Exec(ctx, "cat", file)
	if err != nil {
		return 0, err
	}
	return parseOffset(out)
}

// Proc is a script left running on a host: what it reads and writes, and
// its end. Its session dies with the SSH connection, so a harness that dies
// ends it too (the script sees its input close).
type Proc struct {
	stdin  io.WriteCloser
	stdout io.Reader
	s      *ssh.Session
	done   chan struct{}
	err    error
}

// Stdin is the script's input.
func (p *Proc) Stdin() io.WriteCloser { return p.stdin }

// Stdout is the script's output.
func (p *Proc) Stdout() io.Reader { return p.stdout }

// Wait returns when the script has ended, with its exit error.
func (p *Proc) Wait() error {
	<-p.done
	return p.err
}

// procGrace is how long Close lets a script finish once its input closed.
const procGrace = 5 * time.Second

// Close closes the script's input and lets it finish (its clean-up runs)
// for a moment before the session is closed under it.
func (p *Proc) Close() error {
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(procGrace):
	}
	return p.s.Close()
}

// Start runs script through bash on the host (as root, through sudo -n for
// another user) with args as $1..., and leaves it running: the caller
// talks to it through Stdin and Stdout. Its stderr ends up in Wait's error.
func (n *Node) Start(ctx context.Context, script string, args ...string) (*Proc, error) {
	line := n.commandLine(append([]string{"bash", "-c", script, "lockcheck"}, args...))
	s, err := n.session(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: ssh: %w", n.Name, err)
	}
	in, err := s.StdinPipe()
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: ssh: %w", n.Name, err)
	}
	out, err := s.StdoutPipe()
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: ssh: %w", n.Name, err)
	}
	var errBuf lockedBuffer
	s.Stderr = &errBuf
	if err := s.Start(line); err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: start a script: %w", n.Name, err)
	}
	p := &Proc{stdin: in, stdout: out, s: s, done: make(chan struct{})}
	go func() {
		err := s.Wait()
		if msg := strings.TrimSpace(errBuf.String()); msg != "" {
			err = fmt.Errorf("%w: %s", cmp.Or(err, errors.New("stderr")), msg)
		}
		p.err = err
		close(p.done)
	}()
	return p, nil
}
