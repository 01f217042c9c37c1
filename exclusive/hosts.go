package exclusive

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Script is a script left running on one host: its input, its output and
// its end. Closing Stdin (or the connection dying) ends it.
type Script interface {
	Stdin() io.WriteCloser
	Stdout() io.Reader
	Wait() error
	Close() error
}

// Host runs scripts on one node of a cluster of the user's, as root,
// through a channel the run's faults never cut (lockcheck's partitions let
// SSH through).
type Host interface {
	HostName() string
	Start(ctx context.Context, script string, args ...string) (Script, error)
}

// Hosts is the lease of a cluster of the user's that lockcheck reaches over
// SSH: a flock(1) on /var/tmp/lockcheck-cluster.lease held, on every host,
// by a script the holder keeps running over its SSH connection. A run that
// may partition, pause or kill nodes cannot keep a lease in CQL (its own
// leftover partition cuts the harness off from CQL before it may heal it);
// SSH is what its partitions leave open. Holding every host, not the
// cluster's name, is the point: two runs that name the same node by
// different host lists still exclude each other.
//
// The holder dies, however it dies, when its connection does: the script
// reads its input to the end and exits, and the kernel drops its lock. A
// holder whose machine vanished without closing the connection is dead
// once it has missed its heartbeats for HostsSilence.
type Hosts struct {
	Nodes []Host
	// File is the lease's path on each host ("": HostsFile).
	File string
	// Silence is how long a host waits for a heartbeat before it takes the
	// holder for dead (0: HostsSilence).
	Silence time.Duration
	Log     *slog.Logger
}

// HostsSilence is how long a host's lease script waits for a heartbeat
// before it takes its holder for dead and lets the lock go.
const HostsSilence = 90 * time.Second

// HostsFile is where the lease lives on each host; .holder beside it says who.
const HostsFile = "/var/tmp/lockcheck-cluster.lease"

// hostsScript takes the lease in file $3 for the holder in $1 ($2 "take")
// or only asks who holds it ($2 "ask"), and answers one line: "taken",
// "free", "busy HOLDER" or "noflock". A taken lease is held until the input
// ends or stays silent for $4 seconds.
const hostsScript = `f=$3
command -v flock >/dev/null 2>&1 || { echo noflock; exit 0; }
exec 9>>"$f" || exit 3
if ! flock -n 9; then echo "busy $(cat "$f.holder" 2>/dev/null)"; exit 0; fi
if [ "$2" = ask ]; then echo free; exit 0; fi
printf '%s\n' "$1" > "$f.holder"
echo taken
while read -r -t "$4" _; do :; done
: > "$f.holder"
`

func (h Hosts) file() string {
	if h.File != "" {
		return h.File
	}
	return HostsFile
}

func (h Hosts) silence() time.Duration {
	if h.Silence > 0 {
		return h.Silence
	}
	return HostsSilence
}

// Key is "ssh:" and the hosts, sorted.
func (h Hosts) Key() string {
	names := make([]string, len(h.Nodes))
	for i, n := range h.Nodes {
		names[i] = n.HostName()
	}
	slices.Sort(names)
	return "ssh:" + strings.Join(names, ",")
}

// sorted takes hosts in one order for every holder, so that two takers
// never hold half each forever.
func (h Hosts) sorted() []Host {
	ns := slices.Clone(h.Nodes)
	slices.SortFunc(ns, func(a, b Host) int { return strings.Compare(a.HostName(), b.HostName()) })
	return ns
}

// answer starts the script on n and reads its one-line answer.
func (h Hosts) answer(ctx context.Context, n Host, me Holder, mode string) (Script, string, string, error) {
	mine, _ := json.Marshal(me)
	silence := max(1, int(h.silence().Seconds()))
	s, err := n.Start(ctx, hostsScript, string(mine), mode, h.file(), strconv.Itoa(silence))
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %s: %w", ErrUnavailable, n.HostName(), err)
	}
	line, err := readLine(ctx, s.Stdout())
	if err != nil {
		s.Close()
		werr := s.Wait()
		return nil, "", "", fmt.Errorf("%w: %s: the lease script said nothing: %w", ErrUnavailable, n.HostName(), errors.Join(err, werr))
	}
	word, rest, _ := strings.Cut(line, " ")
	if word == "noflock" {
		s.Close()
		return nil, "", "", fmt.Errorf("%s has no flock(1) (util-linux): lockcheck takes a cluster of the user's with it", n.HostName())
	}
	return s, word, rest, nil
}

// readLine reads one line, giving up with ctx.
func readLine(ctx context.Context, r io.Reader) (string, error) {
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		l, err := bufio.NewReader(r).ReadString('\n')
		ch <- result{strings.TrimSpace(l), err}
	}()
	select {
	case res := <-ch:
		if res.err != nil && res.line == "" {
			return "", res.err
		}
		return res.line, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func parseHolder(s string) Holder {
	var h Holder
	if s == "" || json.Unmarshal([]byte(s), &h) != nil {
		return Holder{Command: "a process that left no name beside the lease"}
	}
	return h
}

// TryTake takes every host's lease, in order; a host held by another gives
// its holder back and frees those taken.
func (h Hosts) TryTake(ctx context.Context, me Holder) (func(), Holder, error) {
	if len(h.Nodes) == 0 {
		return nil, Holder{}, errors.New("no host to take")
	}
	var held []Script
	free := func() {
		for _, s := range held {
			s.Close()
			_ = s.Wait()
		}
	}
	for _, n := range h.sorted() {
		s, word, rest, err := h.answer(ctx, n, me, "take")
		if err != nil {
			free()
			return nil, Holder{}, err
		}
		if word != "taken" {
			s.Close()
			_ = s.Wait()
			free()
			if word == "busy" {
				return nil, parseHolder(rest), nil
			}
			return nil, Holder{}, fmt.Errorf("%w: %s: the lease script said %q", ErrUnavailable, n.HostName(), word+" "+rest)
		}
		held = append(held, s)
	}
	return h.hold(held), Holder{}, nil
}

// hold beats on every host's script until released.
func (h Hosts) hold(scripts []Script) func() {
	log := h.Log
	if log == nil {
		log = slog.Default()
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, s := range scripts {
		wg.Go(func() {
			lost := make(chan error, 1)
			go func() { lost <- s.Wait() }()
			tick := time.NewTicker(h.silence() / 6)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					s.Close()
					<-lost
					return
				case err := <-lost:
					log.Error("cluster lease lost on a host: its SSH session ended (another process may take the cluster)", "err", err)
					return
				case <-tick.C:
					if _, err := io.WriteString(s.Stdin(), "\n"); err != nil {
						log.Warn("cluster lease heartbeat failed", "err", err)
					}
				}
			}
		})
	}
	return func() {
		close(stop)
		wg.Wait()
	}
}

// Holder asks every host who holds its lease.
func (h Hosts) Holder(ctx context.Context) (Holder, bool, error) {
	for _, n := range h.sorted() {
		s, word, rest, err := h.answer(ctx, n, Holder{}, "ask")
		if err != nil {
			return Holder{}, false, err
		}
		s.Close()
		_ = s.Wait()
		if word == "busy" {
			return parseHolder(rest), true, nil
		}
	}
	return Holder{}, false, nil
}
