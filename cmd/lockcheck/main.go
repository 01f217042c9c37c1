// Command lockcheck tests distributed locks built on Cassandra: it runs lock
// recipes against a real cluster under faults, checks the history and reports.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes shared by every subcommand (the same as `lockcheck check`).
const (
	exitValid   = 0
	exitInvalid = 1
	exitError   = 2 // bad input or an error running the command
	exitUnknown = 3
)

// A command runs with its arguments (after the subcommand's name) and returns
// the process's exit code. Each family lives in its own file.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{
	"run":     {"run a test: cluster + lock + workload + nemesis, then check and report", runRun},
	"check":   {"check a history file and print the verdict", runCheck},
	"report":  {"(re)build a run directory's report.html and results.json", runReport},
	"serve":   {"serve an index of stored runs and their reports", runServe},
	"cluster": {"cluster up|status|heal|down: manage the Cassandra cluster", runCluster},
	"lockd":   {"serve a REST lock service over lease-fenced", runLockd},
	"matrix":  {"run the asserted scenarios (docs/findings.md) and print their catch rates", runMatrix},
	"replay":  {"run a stored run again with its faults as they happened, and say whether the verdict repeats", runReplay},
	"shrink":  {"search, by replaying, for the smallest run that fails the same way as a stored one", runShrink},
}

func main() {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitError
		}
		return exitValid
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "lockcheck: unknown command %q (see lockcheck help)\n", args[0])
		return exitError
	}
	return cmd.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: lockcheck COMMAND [flags]")
	for _, name := range []string{"run", "replay", "shrink", "check", "report", "serve", "cluster", "lockd", "matrix"} {
		fmt.Fprintf(w, "  %-8s %s\n", name, commands[name].summary)
	}
}
