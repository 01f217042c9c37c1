package main

import (
	"context"
	"fmt"
	"io"
)

// runRun is not built yet: see the issue that owns `lockcheck run`.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "lockcheck run: not built yet")
	return exitError
}
