package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// Option configures Build.
type Option func(*buildConfig)

type buildConfig struct {
	check []checker.Option
	log   *slog.Logger
}

// WithCheckOptions passes options to the checker (e.g. a timeout).
func WithCheckOptions(opts ...checker.Option) Option {
	return func(c *buildConfig) { c.check = append(c.check, opts...) }
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *buildConfig) { c.log = l } }

// Build checks dir/history.jsonl and (re)writes dir/results.json,
// dir/report.html and porcupine's visualizations in dir/porcupine/. A
// history that breaks the format gives an error wrapping
// history.ErrInvalid, and a report.html that says which line and why.
func Build(ctx context.Context, dir string, opts ...Option) (checker.Result, error) {
	cfg := buildConfig{log: slog.Default()}
	for _, o := range opts {
		o(&cfg)
	}
	t0 := time.Now()
	ops, truncated, err := readHistory(filepath.Join(dir, HistoryFile))
	if err != nil {
		if errors.Is(err, history.ErrInvalid) {
			_ = writeFileAtomic(filepath.Join(dir, ReportFile), func(w io.Writer) error {
				return renderError(w, dir, err)
			})
		}
		return checker.Result{}, fmt.Errorf("reports: %w", err)
	}
	// The report's causes read the grants and leases the checker derives.
	res, err := checker.CheckValidated(ctx, ops, append(slices.Clone(cfg.check), checker.WithTimeline())...)
	if err != nil {
		return checker.Result{}, fmt.Errorf("reports: %w", err)
	}
	res.Truncated = truncated
	in := history.InjectedOf(res.Meta, ops)
	res.Injected = &in
	checked := time.Since(t0)
	if err := writeFileAtomic(filepath.Join(dir, ResultsFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}); err != nil {
		return res, fmt.Errorf("reports: %w", err)
	}
	end := int64(1)
	if len(ops) > 0 {
		end = max(end, ops[len(ops)-1].Time)
	}
	faults, _ := faultViews(ops, res.Meta, end)
	vis := writeVisualizations(dir, res, faults, cfg.log)
	if err := writeFileAtomic(filepath.Join(dir, ReportFile), func(w io.Writer) error {
		return render(w, newPage(dir, ops, res, vis))
	}); err != nil {
		return res, fmt.Errorf("reports: %w", err)
	}
	cfg.log.Info("report built", "dir", dir, "verdict", res.Verdict, "events", len(ops),
		"check", checked.Round(time.Millisecond), "total", time.Since(t0).Round(time.Millisecond))
	return res, nil
}

func readHistory(path string) ([]history.Op, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	hint := 1024
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		hint = int(st.Size()/90) + 16
	}
	return history.ReadSized(f, hint)
}

// visLink is a porcupine visualization written next to the report.
type visLink struct {
	Lock   string
	File   string // relative to the run directory
	Result string
	Ops    int
	Whole  bool
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func writeVisualizations(dir string, res checker.Result, faults []faultView, log *slog.Logger) []visLink {
	pdir := filepath.Join(dir, porcDir)
	_ = os.RemoveAll(pdir)
	if len(res.Linearizability) == 0 {
		return nil
	}
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		log.Warn("porcupine visualizations", "err", err)
		return nil
	}
	var out []visLink
	for i, l := range res.Linearizability {
		name := unsafeChars.ReplaceAllString(l.Lock, "_")
		if len(name) > 40 {
			name = name[:40]
		}
		file := fmt.Sprintf("%s/%02d-%s.html", porcDir, i, name)
		// The fault windows show beside the clients' operations (porcupine
		// annotations share the operations' clock: history time in ns).
		l.Info.AddAnnotations(faultAnnotations(faults))
		if err := l.Visualize(filepath.Join(dir, filepath.FromSlash(file))); err != nil {
			log.Warn("porcupine visualization", "lock", l.Lock, "err", err)
			continue
		}
		result := "linearizable"
		if l.Result != "Ok" {
			result = "not linearizable"
		}
		out = append(out, visLink{Lock: l.Lock, File: file, Result: result, Ops: l.Ops, Whole: l.Whole})
	}
	return out
}

// writeFileAtomic writes path through a temporary file and a rename, so a
// reader (serve) never sees half a report.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
