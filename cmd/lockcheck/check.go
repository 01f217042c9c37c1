package main

import (
	"context"
	"fmt"
	"io"
)

// runCheck is not built yet: see the issue that owns `lockcheck check`.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "lockcheck check: not built yet")
	return exitError
}
