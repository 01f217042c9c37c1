package scripts

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// testLog runs test-log.sh MODE on the sample -v log (two packages, one
// with a failed subtest whose lines another test's interleave): as a filter
// for lines, on the file otherwise.
func testLog(t *testing.T, mode string) string {
	t.Helper()
	const sample = "testdata/go-test-v.log"
	cmd := exec.Command("bash", "test-log.sh", mode, sample)
	if mode == "lines" {
		b, err := os.ReadFile(sample)
		if err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command("bash", "test-log.sh", mode)
		cmd.Stdin = strings.NewReader(string(b))
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("test-log.sh %s: %v", mode, err)
	}
	return string(out)
}

// make test's terminal gets each package's line and every failure, nothing
// of the tests that passed.
func TestTestLogLines(t *testing.T) {
	want := "--- FAIL: TestSlow (3.25s)\n    --- FAIL: TestSlow/broken (2.00s)\nFAIL\nFAIL\tgithub.com/lockcheck/lockcheck/cluster\t27.000s\nok  \tgithub.com/lockcheck/lockcheck\t12.000s\n"
	if got := testLog(t, "lines"); got != want {
		t.Errorf("lines:\n%s\nwant:\n%s", got, want)
	}
}

// A failed test's output is all of its lines, those written after another
// test's (=== NAME) included, and none of a test that passed.
func TestTestLogFailures(t *testing.T) {
	got := testLog(t, "failures")
	for _, want := range []string{"what the failing subtest said", "boom", "said after another test's line", "--- FAIL: TestSlow/broken"} {
		if !strings.Contains(got, want) {
			t.Errorf("failures lack %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"a line of its own", "a row's log", "the first subtest's log"} {
		if strings.Contains(got, not) {
			t.Errorf("failures hold %q, a passing test's:\n%s", not, got)
		}
	}
}

// Each package's time beside its top-level tests', then every test and
// subtest, slowest first, with its package.
func TestTestLogTimes(t *testing.T) {
	got := testLog(t, "times")
	lines := strings.Split(strings.TrimSpace(got), "\n")
	want := []string{
		"package cluster                 27.0s, its top-level tests    24.8s",
		"package .                       12.0s, its top-level tests    10.0s",
		"slowest tests (top-level and subtests):",
		"     20.0s cluster TestMatrix",
		"     19.8s cluster TestMatrix/row",
		"     10.0s . TestOther",
	}
	if len(lines) < len(want) {
		t.Fatalf("times:\n%s", got)
	}
	for i, w := range want {
		if lines[i] != w {
			t.Errorf("line %d: %q, want %q", i, lines[i], w)
		}
	}
}
