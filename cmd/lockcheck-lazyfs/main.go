// Command lockcheck-lazyfs mounts the lazy filesystem (package lazyfs): what
// is written under --mount reaches --backing only when fsynced. The nodes of
// `lockcheck cluster up --lazyfs` keep their data on it, so that a power-loss
// fault (the container killed, this process with it) loses what Cassandra
// had acknowledged and not yet synced.
//
//	lockcheck-lazyfs --backing DIR --mount DIR [--status FILE] [--latency-file FILE]
//
// --latency-file names a file holding a duration ("150ms"; empty, missing
// or 0: none) that every write and fsync waits before it is served (the
// nemesis's slow-disk): read at start and every quarter second, and
// reported in the status as latency_ms.
//
// SIGTERM or SIGINT: write everything out (a clean shutdown), unmount, exit
// 0. SIGUSR1: write everything out and go on (the database's process
// crashed: the page cache survives that). SIGKILL: a power loss.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lockcheck/lockcheck/lazyfs"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("lockcheck-lazyfs", flag.ContinueOnError)
	fl.SetOutput(stderr)
	backing := fl.String("backing", "", "the directory that holds what was synced (created if missing)")
	mount := fl.String("mount", "", "where to mount the filesystem (created if missing)")
	status := fl.String("status", "", "a file to keep the filesystem's counts in (JSON, rewritten at most every 250 ms)")
	// The default comes from the node's environment (cluster.WithLazyFS
	// sets it), so that the node image's entrypoint needs no change.
	latencyFile := fl.String("latency-file", os.Getenv("LOCKCHECK_LAZYFS_LATENCY"), "a file holding the latency every write and fsync waits (\"150ms\"; read every 250 ms; default $LOCKCHECK_LAZYFS_LATENCY)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if *backing == "" || *mount == "" || fl.NArg() > 0 {
		fmt.Fprintln(stderr, "lockcheck-lazyfs: usage: lockcheck-lazyfs --backing DIR --mount DIR [--status FILE] [--latency-file FILE]")
		return 2
	}
	for _, d := range []string{*backing, *mount} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			fmt.Fprintf(stderr, "lockcheck-lazyfs: %v\n", err)
			return 1
		}
	}
	// Before mounting: a signal right after the mount line must not kill
	// the process with the default action, losing everything.
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)

	l, srv, err := lazyfs.Mount(*backing, *mount)
	if err != nil {
		fmt.Fprintf(stderr, "lockcheck-lazyfs: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "lockcheck-lazyfs: mounted %s over %s\n", *mount, *backing)
	// A latency set before a restart holds after it: the disk is slow,
	// whatever became of the process.
	latency := func() {
		if *latencyFile == "" {
			return
		}
		d, err := readLatency(*latencyFile)
		if err != nil {
			fmt.Fprintf(stderr, "lockcheck-lazyfs: latency: %v\n", err)
			return
		}
		if d != l.Latency() {
			fmt.Fprintf(stderr, "lockcheck-lazyfs: latency %v\n", d)
			l.SetLatency(d)
		}
	}
	latency()
	served := make(chan struct{})
	go func() { srv.Wait(); close(served) }()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	last := lazyfs.Status{Fsyncs: -1} // written once at start
	for {
		select {
		case <-tick.C:
			latency()
			if *status != "" {
				if s := l.Status(); s != last {
					if err := writeStatus(*status, s); err != nil {
						fmt.Fprintf(stderr, "lockcheck-lazyfs: status: %v\n", err)
					}
					last = s
				}
			}
		case s := <-sig:
			err := l.WriteOut(*mount)
			if err != nil {
				fmt.Fprintf(stderr, "lockcheck-lazyfs: write out: %v\n", err)
			}
			if s == syscall.SIGUSR1 {
				continue
			}
			if uerr := srv.Unmount(); uerr != nil {
				// Busy: someone still has files open. Everything is written
				// out; detach the mount rather than leave it to a dead
				// process.
				uerr = errors.Join(uerr, syscall.Unmount(*mount, syscall.MNT_DETACH))
				fmt.Fprintf(stderr, "lockcheck-lazyfs: unmount: %v\n", uerr)
			}
			// The unmount made the kernel write back what it still held.
			if werr := l.SyncAll(); werr != nil {
				fmt.Fprintf(stderr, "lockcheck-lazyfs: write out: %v\n", werr)
				err = werr
			}
			if err != nil {
				return 1
			}
			return 0
		case <-served:
			// Unmounted from outside (umount): whatever was not written out
			// is gone with the mount, as with a power loss.
			fmt.Fprintln(stderr, "lockcheck-lazyfs: unmounted from outside")
			return 0
		}
	}
}

// readLatency reads a latency file: a Go duration, nothing (or no file) for
// none.
func readLatency(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	text := strings.TrimSpace(string(b))
	if text == "" || text == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s: %q is not a latency (want a duration such as 150ms)", path, text)
	}
	return d, nil
}

// writeStatus writes aside and renames: a reader never sees half a file.
func writeStatus(path string, s lazyfs.Status) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
