// Command lockcheck-shaper delays packets inside a node's network namespace
// where the kernel has no tc netem: iptables sends the packets to shape to
// an NFQUEUE (netshape's rules select them), and it holds each for the
// delay plus or minus a uniform jitter, then accepts it. Packets of one flow
// (protocol, addresses and ports) leave in the order they came, as a link
// keeps them: a packet's release is never earlier than the one before it in
// its flow. It is copied into the node (static, so any libc) and started by
// the node backend; SIGTERM releases every held packet and exits.
//
//	lockcheck-shaper -queue 4243 -delay 200ms -jitter 50ms -pidfile /run/lockcheck-shaper.pid
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	nfqueue "github.com/florianl/go-nfqueue/v2"
	"github.com/mdlayher/netlink"
)

func main() {
	fs := flag.NewFlagSet("lockcheck-shaper", flag.ContinueOnError)
	queue := fs.Uint("queue", 4243, "the NFQUEUE number the rules send packets to")
	delay := fs.Duration("delay", 0, "how long each packet is held")
	jitter := fs.Duration("jitter", 0, "uniform jitter around the delay (at most the delay)")
	pidfile := fs.String("pidfile", "", "written once the queue is bound (the backend waits for it)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if err := validate(*queue, *delay, *jitter); err != nil {
		fmt.Fprintln(os.Stderr, "lockcheck-shaper:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(uint16(*queue), *delay, *jitter, *pidfile, log); err != nil {
		fmt.Fprintln(os.Stderr, "lockcheck-shaper:", err)
		os.Exit(1)
	}
}

func validate(queue uint, delay, jitter time.Duration) error {
	switch {
	case queue > 65535:
		return fmt.Errorf("-queue %d: at most 65535", queue)
	case delay <= 0:
		return fmt.Errorf("-delay %s: must be positive", delay)
	case jitter < 0 || jitter > delay:
		return fmt.Errorf("-jitter %s: must be between 0 and the delay %s", jitter, delay)
	}
	return nil
}

func run(queue uint16, delay, jitter time.Duration, pidfile string, log *slog.Logger) error {
	nf, err := nfqueue.Open(&nfqueue.Config{
		NfQueue: queue,
		// The flow key needs the IP and TCP/UDP headers only: the verdict
		// leaves the packet as it was.
		MaxPacketLen: 64,
		MaxQueueLen:  1 << 16,
		Copymode:     nfqueue.NfQnlCopyPacket,
		// Fail open: a queue that fills up passes packets rather than
		// dropping them (a delay, never a loss).
		Flags:        nfqueue.NfQaCfgFlagFailOpen | nfqueue.NfQaCfgFlagGSO,
		WriteTimeout: time.Second,
	})
	if err != nil {
		return fmt.Errorf("open queue %d: %w", queue, err)
	}
	defer nf.Close()
	if err := nf.SetOption(netlink.NoENOBUFS, true); err != nil {
		return fmt.Errorf("queue %d: %w", queue, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	h := newHolder(delay, jitter, time.Now().UnixNano())
	in := make(chan held, 1<<16)
	hook := func(a nfqueue.Attribute) int {
		if a.PacketID == nil {
			return 0
		}
		var payload []byte
		if a.Payload != nil {
			payload = *a.Payload
		}
		in <- held{id: *a.PacketID, due: h.due(time.Now(), flowOf(payload))}
		return 0
	}
	onErr := func(err error) int {
		if ctx.Err() != nil {
			return 1
		}
		var op *netlink.OpError
		if errors.As(err, &op) && (op.Timeout() || op.Temporary()) {
			return 0
		}
		log.Warn("read queue", "err", err)
		return 0
	}
	if err := nf.RegisterWithErrorFunc(ctx, hook, onErr); err != nil {
		return fmt.Errorf("bind queue %d: %w", queue, err)
	}
	if pidfile != "" {
		if err := os.WriteFile(pidfile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			return err
		}
		defer os.Remove(pidfile)
	}
	release(ctx, in, func(id uint32) {
		if err := nf.SetVerdict(id, nfqueue.NfAccept); err != nil {
			log.Warn("accept", "packet", id, "err", err)
		}
	})
	return nil
}

// release accepts each packet of in at its due time, in due order (a
// packet's due is never before the one before it in its flow, so the order
// of a flow holds); when ctx ends it accepts what it holds at once.
func release(ctx context.Context, in <-chan held, accept func(uint32)) {
	var q heldQueue
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		for q.Len() > 0 && !q.peek().due.After(now) {
			accept(q.pop().id)
		}
		wait := time.Hour
		if q.Len() > 0 {
			wait = q.peek().due.Sub(now)
		}
		timer.Reset(wait)
		select {
		case p := <-in:
			q.push(p)
		case <-timer.C:
		case <-ctx.Done():
			for q.Len() > 0 {
				accept(q.pop().id)
			}
			for {
				select {
				case p := <-in:
					accept(p.id)
				default:
					return
				}
			}
		}
	}
}
