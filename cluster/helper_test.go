package cluster

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestOwnerAlive(t *testing.T) {
	if _, start := procStat(os.Getpid()); start == "" {
		t.Skip("no /proc here")
	}
	place := ownerPlace()
	label := func(parts ...string) string { return strings.Join(parts, "/") }
	self := strconv.Itoa(os.Getpid())
	_, selfStart := procStat(os.Getpid())

	ended := exec.Command("true")
	if err := ended.Start(); err != nil {
		t.Fatal(err)
	}
	_, endedStart := procStat(ended.Process.Pid)
	if err := ended.Wait(); err != nil {
		t.Fatal(err)
	}

	// A zombie: killed, not yet reaped, its /proc entry still there.
	zombie := exec.Command("sleep", "60")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = zombie.Wait() })
	_, zombieStart := procStat(zombie.Process.Pid)
	if err := zombie.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for st := ""; st != "Z"; st, _ = procStat(zombie.Process.Pid) {
		if time.Since(killed) > 10*time.Second {
			t.Fatalf("the killed child's state is %q, not a zombie", st)
		}
		time.Sleep(10 * time.Millisecond)
	}

	host, _ := os.Hostname()
	_, boot, _ := strings.Cut(place, "/")
	tests := []struct {
		name         string
		label        string
		alive, known bool
	}{
		{"this process", owner(), true, true},
		{"its pid reused by another process", label(place, self, "1"), false, true},
		{"a process that ended", label(place, strconv.Itoa(ended.Process.Pid), endedStart), false, true},
		{"a killed process not yet reaped", label(place, strconv.Itoa(zombie.Process.Pid), zombieStart), false, true},
		{"another host", label(host+"-elsewhere", boot, self, selfStart), false, false},
		{"another boot", label(host, "00000000-0000-0000-0000-000000000000", strings.SplitN(place, "/", 3)[2], self, selfStart), false, false},
		{"another pid namespace", label(host, strings.SplitN(place, "/", 3)[1], "pid:[1]", self, selfStart), false, false},
		{"no start time", label(place, self, ""), false, false},
		{"a label made before owners had a place", label(host, self, selfStart), false, false},
		{"no label", "", false, false},
		{"not a pid", label(place, "x", "1"), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			alive, known := ownerAlive(tt.label)
			if alive != tt.alive || known != tt.known {
				t.Errorf("ownerAlive(%q) = %v, %v; want %v, %v", tt.label, alive, known, tt.alive, tt.known)
			}
		})
	}
}
