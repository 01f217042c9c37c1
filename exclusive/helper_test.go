package exclusive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The test binary is its own second process: LOCKCHECK_LEASE_HELPER=DIR,NAME,MODE.
func TestMain(m *testing.M) {
	if v := os.Getenv("LOCKCHECK_LEASE_HELPER"); v != "" {
		os.Exit(helperMain(v))
	}
	os.Exit(m.Run())
}

func helperMain(v string) int {
	f := strings.SplitN(v, ",", 3)
	dir, name, mode := f[0], f[1], f[2]
	l, err := Take(context.Background(), Local{Name: name, Dir: dir}, NoWait(mode == "--no-wait"))
	if errors.Is(err, ErrBusy) {
		fmt.Println(err)
		return 2
	}
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer l.Release()
	switch mode {
	case "--hold":
		fmt.Print("taken")
		_, _ = io.Copy(io.Discard, os.Stdin)
	case "--hold-clean": // noted clean, but killed before it lets go
		l.SetClean(true)
		fmt.Print("taken")
		_, _ = io.Copy(io.Discard, os.Stdin)
	case "--clean": // says whether it found the last holder's note, and leaves one
		fmt.Print(l.Clean())
		l.SetClean(true)
	case "--report": // says whether it found the note, and passes it on
		fmt.Print(l.Clean())
	case "--unclean": // says whether it found the note, and takes it back
		fmt.Print(l.Clean())
		l.SetClean(false)
	}
	return 0
}

func helperCmd(t *testing.T, dir, name, mode string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LOCKCHECK_LEASE_HELPER="+dir+","+name+","+mode)
	return cmd
}

func helper(t *testing.T, dir, name, mode string) (string, int) {
	t.Helper()
	out, err := helperCmd(t, dir, name, mode).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}
