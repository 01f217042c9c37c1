package faultkind

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// Decode wants the fields whose zero value means something.
func TestDecode(t *testing.T) {
	type v struct {
		Client int `json:"client"`
	}
	for _, tc := range []struct {
		raw      string
		required []string
		ok       bool
	}{
		{`{"client":0}`, []string{"client"}, true},
		{`{}`, []string{"client"}, false},
		{`{}`, nil, true},
		{`"ok"`, nil, false},
	} {
		if _, ok := Decode[v](json.RawMessage(tc.raw), tc.required...); ok != tc.ok {
			t.Errorf("Decode(%s, %v): ok %v, want %v", tc.raw, tc.required, ok, tc.ok)
		}
	}
	if got := ClientList([]int{1, 4}); got != "clients 1, 4" {
		t.Errorf("ClientList = %q", got)
	}
	if got := SecondsText("+4.512s"); got != "4.5 s" {
		t.Errorf("SecondsText = %q", got)
	}
}

// The data flows one way: faultkind is a leaf (history only), and the
// reports read the kinds' causes through it, never linking the nemesis or
// a cluster.
func TestLeaf(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the dependencies with")
	}
	for _, tc := range []struct {
		pkg     string
		allowed func(dep string) bool
	}{
		{".", func(dep string) bool { return dep == "github.com/lockcheck/lockcheck/history" }},
		{"../reports", func(dep string) bool {
			return !strings.HasSuffix(dep, "/nemesis") && !strings.HasSuffix(dep, "/cluster") && !strings.HasSuffix(dep, "/workload")
		}},
	} {
		out, err := exec.Command(goTool, "list", "-deps", tc.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tc.pkg, err)
		}
		for dep := range strings.SplitSeq(string(out), "\n") {
			if strings.HasPrefix(dep, "github.com/lockcheck/lockcheck/") && !strings.HasSuffix(dep, "/faultkind") &&
				!strings.HasSuffix(dep, "/reports") && !tc.allowed(dep) {
				t.Errorf("%s links %s", tc.pkg, dep)
			}
		}
	}
}
