package main

import (
	"context"
	"fmt"
	"io"
)

// runLockd is not built yet: see the issue that owns `lockcheck lockd`.
func runLockd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "lockcheck lockd: not built yet")
	return exitError
}
