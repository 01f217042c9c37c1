package lockcmd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The test binary is also the fake plug-in of these tests: run with
// LOCKCMD_FAKE=mode, it speaks the protocol (or breaks it) on stdin/stdout
// instead of running the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("LOCKCMD_FAKE"); mode != "" {
		os.Exit(fakePlugin(mode))
	}
	os.Exit(m.Run())
}

// fakeCommand is the --lock-cmd that runs the fake plug-in in mode.
func fakeCommand(mode string) string {
	return fmt.Sprintf("LOCKCMD_FAKE=%s exec '%s'", mode, os.Args[0])
}

// fakePlugin is a plug-in with one in-memory lock table (per process: the
// tests need the protocol, not mutual exclusion across processes). The lock
// name picks a behaviour, so that one process can answer well and then
// badly:
//
//	env      fail, error = the LOCKCHECK_ environment
//	pid      fail, error = its pid
//	date     fail, error = `date +%s` (a libc clock: libfaketime reaches it)
//	child    starts `sleep 300` in its process group, fail, error = its pid
//	badjson, wrongid, silent, exit, huge, info, failop   break or answer so
//
// Modes: ok; renew (setup says "renew":true; renews answer lease_ms 2500,
// but samelease's none); failsetup (setup answers fail); banner (prints a line before
// setup's reply); deaf (ignores end of input).
func fakePlugin(mode string) int {
	if mode == "banner" {
		fmt.Println("starting up, please wait")
	}
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	held := map[string]string{}
	var token, flaky int64
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "fake: bad request:", err)
			return 2
		}
		ok := map[string]any{"id": req.ID, "type": "ok"}
		fail := func(msg string) map[string]any { return map[string]any{"id": req.ID, "type": "fail", "error": msg} }
		var r map[string]any
		switch {
		case req.Op == "setup" && mode == "failsetup":
			fmt.Fprintln(os.Stderr, "fake: keyspace missing")
			r = fail("no keyspace lockcheck_x")
		case req.Op == "setup" && mode == "renew":
			r = map[string]any{"id": req.ID, "type": "ok", "renew": true}
		case req.Op == "setup":
			r = ok
		case req.Op == "renew":
			switch {
			case held[req.Lock] != req.Owner:
				r = fail("not held")
			case req.Lock == "samelease":
				r = ok
			default:
				r = map[string]any{"id": req.ID, "type": "ok", "lease_ms": 2500, "token": 99}
			}
		case req.Op == "release":
			if held[req.Lock] != req.Owner {
				r = fail("not held")
			} else {
				delete(held, req.Lock)
				r = ok
			}
		default:
			switch req.Lock {
			case "env":
				var env []string
				for _, k := range []string{"LOCKCHECK_HOSTS", "LOCKCHECK_KEYSPACE", "LOCKCHECK_CLIENT", "LOCKCHECK_TTL_MS", "LOCKCHECK_DC"} {
					env = append(env, k+"="+os.Getenv(k))
				}
				r = fail(strings.Join(env, " "))
			case "pin":
				v, set := os.LookupEnv("LOCKCHECK_PIN")
				r = fail(fmt.Sprintf("%q %v", v, set))
			case "pid":
				r = fail(fmt.Sprint(os.Getpid()))
			case "date":
				b, err := exec.Command("date", "+%s").Output()
				if err != nil {
					r = fail(err.Error())
				} else {
					r = fail(strings.TrimSpace(string(b)))
				}
			case "child":
				c := exec.Command("sleep", "300")
				if err := c.Start(); err != nil {
					r = fail(err.Error())
				} else {
					r = fail(fmt.Sprint(c.Process.Pid))
				}
			case "badjson":
				fmt.Println(`{"id":` + fmt.Sprint(req.ID) + `,"type":"ok"`)
				continue
			case "wrongid":
				r = map[string]any{"id": req.ID + 1, "type": "ok"}
			case "silent":
				// Said on stderr, so that a test knows the request is in
				// flight (read, never answered).
				fmt.Fprintln(os.Stderr, "fake: silent request read")
				continue
			case "exit":
				fmt.Fprintln(os.Stderr, "fake: exiting on purpose")
				return 3
			case "huge":
				fmt.Println(`{"id":` + fmt.Sprint(req.ID) + `,"type":"ok","pad":"` + strings.Repeat("x", maxLine) + `"}`)
				continue
			case "info":
				r = map[string]any{"id": req.ID, "type": "info", "error": "cas timeout"}
			case "failop":
				r = fail("held by someone")
			case "flaky":
				// Every fifth acquire of this process breaks the protocol.
				flaky++
				if flaky%5 == 0 {
					fmt.Println("garbage")
					continue
				}
				if _, h := held[req.Lock]; h {
					r = fail("held")
					break
				}
				held[req.Lock] = req.Owner
				r = map[string]any{"id": req.ID, "type": "ok", "lease_ms": 1000}
			case "badtoken":
				r = map[string]any{"id": req.ID, "type": "ok", "token": 1.5}
			default:
				if o, h := held[req.Lock]; h && o != req.Owner {
					r = fail("held")
					break
				}
				held[req.Lock] = req.Owner
				token++
				r = map[string]any{"id": req.ID, "type": "ok", "token": token, "lease_ms": 1500}
			}
		}
		if err := out.Encode(r); err != nil {
			return 2
		}
	}
	if mode == "deaf" {
		select {} // ignores the end of its input: Close must kill it
	}
	return 0
}
