package main

import (
	"context"
	"fmt"
	"io"
)

// runReport is not built yet: see the issue that owns `lockcheck report`.
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "lockcheck report: not built yet")
	return exitError
}
