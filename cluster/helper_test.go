package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

func TestOwnerAlive(t *testing.T) {
	if processStart(os.Getpid()) == "" {
		t.Skip("no /proc here")
	}
	host, _ := os.Hostname()
	dead := exec.Command("true")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	deadStart := processStart(dead.Process.Pid)
	if err := dead.Wait(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		label        string
		alive, known bool
	}{
		{"this process", owner(), true, true},
		{"its pid reused by another process", fmt.Sprintf("%s/%d/1", host, os.Getpid()), false, true},
		{"a process that ended", fmt.Sprintf("%s/%d/%s", host, dead.Process.Pid, deadStart), false, true},
		{"another host", fmt.Sprintf("%s-elsewhere/%d/1", host, os.Getpid()), false, false},
		{"no start time", fmt.Sprintf("%s/%d/", host, os.Getpid()), false, false},
		{"no label", "", false, false},
		{"not a pid", host + "/x/1", false, false},
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
