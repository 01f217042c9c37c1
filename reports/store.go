package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
)

// Files of a run directory.
const (
	HistoryFile = "history.jsonl"
	ResultsFile = "results.json"
	ReportFile  = "report.html"
	LogFile     = "lockcheck.log"
	NodesDir    = "nodes" // nodes/<n>/system.log
	porcDir     = "porcupine"
)

// RunTimeFormat names a run directory: store/<test>/<YYYYMMDDTHHMMSS>/.
const RunTimeFormat = "20060102T150405"

var testName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// NewRunDir makes store/<test>/<YYYYMMDDTHHMMSS>/ (UTC) and points
// store/latest and store/<test>/latest at it. When two runs of a test start
// within a second, the later one gets a -2, -3 ... suffix.
func NewRunDir(store, test string, at time.Time) (string, error) {
	if !testName.MatchString(test) || test == "latest" {
		return "", fmt.Errorf("reports: test name %q: use letters, digits, '.', '_' and '-'", test)
	}
	base := filepath.Join(store, test, at.UTC().Format(RunTimeFormat))
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return "", fmt.Errorf("reports: %w", err)
	}
	dir := base
	for i := 2; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i > 1000 {
			return "", fmt.Errorf("reports: %w", err)
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
	if err := UpdateLatest(store, dir); err != nil {
		return dir, err
	}
	return dir, nil
}

// UpdateLatest points store/latest and store/<test>/latest at the run
// directory dir (store/<test>/<time>), with relative symbolic links replaced
// atomically.
func UpdateLatest(store, dir string) error {
	rel, err := filepath.Rel(store, dir)
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) != 2 || parts[0] == ".." {
		return fmt.Errorf("reports: %s is not a run directory store/<test>/<time> of %s", dir, store)
	}
	if err := relink(filepath.Join(store, "latest"), rel); err != nil {
		return err
	}
	return relink(filepath.Join(store, parts[0], "latest"), parts[1])
}

func relink(link, target string) error {
	tmp := fmt.Sprintf("%s.tmp%d", link, os.Getpid())
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err := os.Rename(tmp, link); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

// Run is a stored run, as the index lists it.
type Run struct {
	Test     string
	Short    string // Test's short form (ShortName)
	Name     string // the directory's name: its start time
	Dir      string // relative to the store, slash-separated
	Time     time.Time
	Verdict  checker.Verdict // "" when not checked yet
	Duration float64         // seconds of history
	Anomaly  int
	Events   int
	Promise  string
	Files    []string // raw files present, relative to Dir
	HasHTML  bool
	Err      string // why results.json could not be read
	// SetupFailed is why the run's set-up failed (no test ran).
	SetupFailed string
}

// ListRuns lists the runs of a store, newest first.
func ListRuns(store string) ([]Run, error) {
	tests, err := os.ReadDir(store)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	var runs []Run
	for _, t := range tests {
		if !t.IsDir() || t.Name() == "latest" {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(store, t.Name()))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !e.IsDir() || e.Name() == "latest" {
				continue
			}
			at, err := time.Parse(RunTimeFormat, strings.SplitN(e.Name(), "-", 2)[0])
			if err != nil {
				continue // not a run directory
			}
			runs = append(runs, readRun(store, t.Name(), e.Name(), at))
		}
	}
	sort.Slice(runs, func(i, j int) bool {
		if !runs[i].Time.Equal(runs[j].Time) {
			return runs[i].Time.After(runs[j].Time)
		}
		return runs[i].Dir > runs[j].Dir
	})
	return runs, nil
}

func readRun(store, test, name string, at time.Time) Run {
	r := Run{Test: test, Short: test, Name: name, Dir: test + "/" + name, Time: at}
	dir := filepath.Join(store, test, name)
	for _, f := range []string{HistoryFile, ResultsFile, LogFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			r.Files = append(r.Files, f)
		}
	}
	r.Files = append(r.Files, nodeLogs(dir)...)
	if _, err := os.Stat(filepath.Join(dir, ReportFile)); err == nil {
		r.HasHTML = true
	}
	b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		return r
	}
	var res checker.Result
	if err := json.Unmarshal(b, &res); err != nil {
		r.Err = err.Error()
		return r
	}
	r.Verdict, r.Duration, r.Events = res.Verdict, res.Stats.Duration, res.Stats.Events
	r.Anomaly = len(res.Anomalies) + res.AnomaliesOmitted
	r.Promise = string(res.Promise)
	if res.Meta != nil {
		r.Short = ShortName(test, res.Meta.Nemesis)
	}
	r.SetupFailed = res.SetupFailed
	return r
}

// nodeLogs lists nodes/<n>/system.log files of a run directory.
func nodeLogs(dir string) []string {
	nodes, err := os.ReadDir(filepath.Join(dir, NodesDir))
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range nodes {
		p := NodesDir + "/" + n.Name() + "/system.log"
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err == nil {
			out = append(out, p)
		}
	}
	return out
}
