package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The restore script, run by sh on a data directory laid out as a node's:
// what it puts back, what it removes and what it keeps, file by file.
func TestRestoreScript(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	d := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(d, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const tag = "lockcheck-restore-1"
	// A table with a snapshot: the old SSTable in the snapshot, a newer one
	// and a flush's transaction log beside it.
	write("data/lockcheck/leases-0a/nb-1-big-Data.db", "old")
	write("data/lockcheck/leases-0a/snapshots/"+tag+"/nb-1-big-Data.db", "old")
	write("data/lockcheck/leases-0a/snapshots/"+tag+"/manifest.json", "{}")
	write("data/lockcheck/leases-0a/snapshots/"+tag+"/schema.cql", "CREATE")
	write("data/lockcheck/leases-0a/nb-2-big-Data.db", "new")
	write("data/lockcheck/leases-0a/nb_txn_flush_x.log", "txn")
	write("data/lockcheck/leases-0a/snapshots/other/nb-1-big-Data.db", "old")
	// A table created after the snapshot: emptied.
	write("data/lockcheck/later-0b/nb-1-big-Data.db", "new")
	// Paxos state: put back; the rest of system and system_schema: kept.
	write("data/system/paxos-0c/nb-1-big-Data.db", "new promise")
	write("data/system/paxos-0c/snapshots/"+tag+"/nb-0-big-Data.db", "old promise")
	write("data/system/local-0d/nb-5-big-Data.db", "tokens")
	write("data/system/local-0d/snapshots/"+tag+"/nb-4-big-Data.db", "old tokens")
	write("data/system/_paxos_repair_state/uncommitted", "keys")
	write("data/system_schema/tables-0e/nb-9-big-Data.db", "schema")
	write("data/system_schema/tables-0e/snapshots/"+tag+"/nb-8-big-Data.db", "old schema")
	write("commitlog/CommitLog-7-1.log", "segment")
	write("commitlog/CommitLog-7-2.log", "segment")
	write("saved_caches/KeyCache-g.db", "cache")
	write("hints/h-1.hints", "hint")

	cmd := exec.Command("sh", "-c", restoreScript, "restore", tag)
	cmd.Env = append(os.Environ(), "LOCKCHECK_DATA_DIR="+d)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	tables, removed, commitlog, err := parseRestored(string(out))
	if err != nil {
		t.Fatal(err)
	}
	// leases and paxos put back; leases' 3 files, later's 1 and paxos's 1 removed.
	if tables != 2 || removed != 5 || commitlog != 2 {
		t.Errorf("tables %d removed %d commitlog %d, want 2 5 2 (%s)", tables, removed, commitlog, out)
	}
	var files []string
	filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(d, p)
			if !strings.Contains(rel, "/snapshots/") {
				files = append(files, rel+"="+string(b))
			}
		}
		return nil
	})
	slices.Sort(files)
	want := []string{
		"data/lockcheck/leases-0a/nb-1-big-Data.db=old",
		"data/system/_paxos_repair_state/uncommitted=keys",
		"data/system/local-0d/nb-5-big-Data.db=tokens",
		"data/system/paxos-0c/nb-0-big-Data.db=old promise",
		"data/system_schema/tables-0e/nb-9-big-Data.db=schema",
		"hints/h-1.hints=hint",
	}
	if !slices.Equal(files, want) {
		t.Errorf("files after the restore:\n%s\nwant:\n%s", strings.Join(files, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Stat(filepath.Join(d, "data/lockcheck/leases-0a/snapshots", tag, "nb-1-big-Data.db")); err != nil {
		t.Errorf("the snapshot itself is gone: %v", err)
	}
	// Twice is once.
	cmd = exec.Command("sh", "-c", restoreScript, "restore", tag)
	cmd.Env = append(os.Environ(), "LOCKCHECK_DATA_DIR="+d)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "tables 2 removed 2 commitlog 0") {
		t.Errorf("again: %v: %s", err, out)
	}
}

func TestSnapshotTag(t *testing.T) {
	for tag, ok := range map[string]bool{"lockcheck-restore-0a1b": true, "backup_1.2": true, "": false, "-x": false, "a b": false, "a;rm": false, "a/b": false} {
		if err := CheckSnapshotTag(tag); (err == nil) != ok {
			t.Errorf("CheckSnapshotTag(%q) = %v, want ok %v", tag, err, ok)
		}
	}
	e := &NoSnapshotError{Node: "n2", Tag: "x"}
	if e.Error() != `node n2 has no snapshot "x" (it has: none)` {
		t.Errorf("%q", e.Error())
	}
}
