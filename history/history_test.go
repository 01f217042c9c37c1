package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWriterConcurrentAppendsReadBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const procs, each = 8, 200
	var wg sync.WaitGroup
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				inv, err := w.Append(Op{Process: p, Type: Invoke, F: FAdd, Lock: "l", Value: json.RawMessage(`1`)})
				if err != nil {
					t.Error(err)
					return
				}
				typ := OK
				if i%3 == 0 {
					typ = Fail
				}
				done, err := w.Append(Op{Process: p, Type: typ, F: FAdd, Lock: "l"})
				if err != nil {
					t.Error(err)
					return
				}
				if done.Index <= inv.Index || done.Time < inv.Time {
					t.Errorf("completion %+v stamped before its invoke %+v", done, inv)
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ops, err := ReadFile(path)
	if err != nil {
		t.Fatalf("reading back what the writer wrote: %v", err)
	}
	if len(ops) != procs*each*2 {
		t.Fatalf("read %d ops, want %d", len(ops), procs*each*2)
	}
	if _, err := w.Append(Op{Process: 0, Type: Invoke, F: FAdd, Lock: "l"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}
}

// The background flush puts lines on disk without Close, so a killed run
// loses at most what was appended in the last interval.
func TestWriterFlushesPeriodically(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path, WithFlushInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Append(Op{Process: 0, Type: Invoke, F: FAcquire, Lock: "l"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Count(b, []byte("\n")) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("line not flushed to the file within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A killed run's history (invoke without completion) is readable.
	ops, err := ReadFile(path)
	if err != nil || len(ops) != 1 {
		t.Fatalf("ReadFile = %d ops, %v", len(ops), err)
	}
}

func TestWriterRejectsBadValueWithoutGap(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, WithFlushInterval(0))
	if _, err := w.Append(Op{Process: 0, Type: Invoke, F: FAdd, Lock: "l", Value: json.RawMessage(`{`)}); err == nil {
		t.Fatal("Append accepted an invalid JSON value")
	}
	op, err := w.Append(Op{Process: 0, Type: Invoke, F: FAdd, Lock: "l", Value: json.RawMessage(`1`)})
	if err != nil || op.Index != 0 {
		t.Fatalf("Append = %+v, %v; want index 0", op, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAll(&buf); err != nil {
		t.Fatal(err)
	}
}

// line builds a history line; fields may be overridden.
func line(idx, tm int64, proc int, typ, f, lock string, extra string) string {
	s := `{"index":` + itoa(idx) + `,"time":` + itoa(tm) + `,"process":` + itoa(int64(proc)) +
		`,"type":"` + typ + `","f":"` + f + `"`
	if lock != "" {
		s += `,"lock":"` + lock + `"`
	}
	return s + extra + "}\n"
}

func itoa(i int64) string { b, _ := json.Marshal(i); return string(b) }

func TestReaderRules(t *testing.T) {
	meta := `,"value":{"test":"t","promise":"mutex"}`
	tests := []struct {
		name    string
		in      string
		ops     int    // ops read when valid
		pending int    // invokes without completion
		wantErr string // substring of the error; "" when valid
		line    int64
	}{
		{name: "empty", in: "", ops: 0},
		{name: "pair", in: line(0, 0, 0, "invoke", "acquire", "a", "") + line(1, 5, 0, "ok", "acquire", "a", `,"lease_ms":100`), ops: 2},
		{name: "killed run: invoke without completion", in: line(0, 0, 0, "invoke", "acquire", "a", ""), ops: 1, pending: 1},
		{name: "trailing blank lines accepted", in: line(0, 0, 0, "invoke", "acquire", "a", "") + "\n\n \n", ops: 1, pending: 1},
		{name: "trailing blank line without newline", in: line(0, 0, 0, "invoke", "acquire", "a", "") + "\n  ", ops: 1, pending: 1},
		{name: "truncated last line dropped", in: line(0, 0, 0, "invoke", "acquire", "a", "") + `{"index":1,"ti`, ops: 1, pending: 1},
		{name: "nemesis free-form", in: line(0, 0, -1, "info", "start-partition", "", `,"value":["n1"]`) + line(1, 0, -1, "info", "stop-partition", "", ""), ops: 2},
		{name: "meta", in: line(0, 0, -1, "info", "meta", "", meta), ops: 1},
		{name: "index gap", in: line(0, 0, 0, "invoke", "acquire", "a", "") + line(2, 1, 0, "ok", "acquire", "a", ""), wantErr: "index 2, want 1", line: 2},
		{name: "index not from 0", in: line(1, 0, 0, "invoke", "acquire", "a", ""), wantErr: "index 1, want 0", line: 1},
		{name: "time decreases", in: line(0, 10, 0, "invoke", "acquire", "a", "") + line(1, 9, 0, "ok", "acquire", "a", ""), wantErr: "time never decreases", line: 2},
		{name: "negative time", in: line(0, -1, 0, "invoke", "acquire", "a", ""), wantErr: "negative time", line: 1},
		{name: "unknown type", in: line(0, 0, 0, "done", "acquire", "a", ""), wantErr: `unknown type "done"`, line: 1},
		{name: "completion without invoke", in: line(0, 0, 0, "ok", "acquire", "a", ""), wantErr: "without an outstanding invoke", line: 1},
		{name: "completion f differs", in: line(0, 0, 0, "invoke", "acquire", "a", "") + line(1, 0, 0, "ok", "release", "a", ""), wantErr: "f differs", line: 2},
		{name: "completion lock differs", in: line(0, 0, 0, "invoke", "acquire", "a", "") + line(1, 0, 0, "ok", "acquire", "b", ""), wantErr: `on lock "b"`, line: 2},
		{name: "two outstanding", in: line(0, 0, 0, "invoke", "acquire", "a", "") + line(1, 0, 0, "invoke", "release", "a", ""), wantErr: "one op per process", line: 2},
		{name: "reuse after info", in: line(0, 0, 0, "invoke", "acquire", "a", "") + line(1, 0, 0, "info", "acquire", "a", "") + line(2, 0, 0, "invoke", "acquire", "a", ""), wantErr: "after an info", line: 3},
		{name: "process below -1", in: line(0, 0, -2, "invoke", "acquire", "a", ""), wantErr: "process -2", line: 1},
		{name: "lock op without lock", in: line(0, 0, 0, "invoke", "acquire", "", ""), wantErr: "without a lock", line: 1},
		{name: "register ops", in: line(0, 0, 0, "invoke", "reg-cas", "", `,"key":"k","value":{"expect":1,"new":2}`) +
			line(1, 1, 0, "fail", "reg-cas", "", `,"key":"k","value":{"expect":1,"new":2,"seen":null}`) +
			line(2, 2, 1, "invoke", "reg-read", "", `,"key":"k"`) + line(3, 3, 1, "ok", "reg-read", "", `,"value":{"seen":3}`), ops: 4},
		{name: "register op without key", in: line(0, 0, 0, "invoke", "reg-read", "", ""), wantErr: "reg-read invoke without a key", line: 1},
		{name: "insert without a value", in: line(0, 0, 0, "invoke", "reg-insert", "", `,"key":"k","value":{"new":null}`), wantErr: "without a new value", line: 1},
		{name: "cas without expect", in: line(0, 0, 0, "invoke", "reg-cas", "", `,"key":"k","value":{"new":1}`), wantErr: "without the expected value", line: 1},
		{name: "register delete", in: line(0, 0, 0, "invoke", "reg-delete", "", `,"key":"k","value":{"expect":1}`) +
			line(1, 1, 0, "ok", "reg-delete", "", `,"key":"k","value":{"expect":1}`), ops: 2},
		{name: "delete without expect", in: line(0, 0, 0, "invoke", "reg-delete", "", `,"key":"k","value":{}`), wantErr: "without the expected value", line: 1},
		{name: "delete with a new value", in: line(0, 0, 0, "invoke", "reg-delete", "", `,"key":"k","value":{"expect":1,"new":2}`), wantErr: "a delete writes none", line: 1},
		{name: "read ok without seen", in: line(0, 0, 0, "invoke", "reg-read", "", `,"key":"k"`) + line(1, 0, 0, "ok", "reg-read", "", ""), wantErr: `ok without "seen"`, line: 2},
		{name: "applied cas with seen", in: line(0, 0, 0, "invoke", "reg-cas", "", `,"key":"k","value":{"expect":1,"new":2}`) + line(1, 0, 0, "ok", "reg-cas", "", `,"value":{"seen":1}`), wantErr: "an applied write reports none", line: 2},
		{name: "register value not an object", in: line(0, 0, 0, "invoke", "reg-insert", "", `,"key":"k","value":3`), wantErr: "not an object", line: 1},
		{name: "completion on another key", in: line(0, 0, 0, "invoke", "reg-read", "", `,"key":"k"`) + line(1, 0, 0, "ok", "reg-read", "", `,"key":"j","value":{"seen":1}`), wantErr: `on key "j" completes an invoke on key "k"`, line: 2},
		{name: "add without element", in: line(0, 0, 0, "invoke", "add", "a", ""), wantErr: "add invoke without a value", line: 1},
		{name: "missing f", in: `{"index":0,"time":0,"process":0,"type":"invoke"}` + "\n", wantErr: `missing "f"`, line: 1},
		{name: "missing index", in: `{"time":0,"process":0,"type":"invoke","f":"x"}` + "\n", wantErr: `missing "index"`, line: 1},
		{name: "not json", in: "hello\n", wantErr: "not a JSON object", line: 1},
		// A blank line inside a history breaks it; trailing ones do not
		// (issue 12: an editor's last newline used to be refused).
		{name: "empty line", in: line(0, 0, 0, "invoke", "x", "", "") + "\n" + line(1, 0, 0, "ok", "x", "", ""), wantErr: "empty line", line: 2},
		{name: "blank lines then an op", in: line(0, 0, 0, "invoke", "x", "", "") + "\n  \n" + line(1, 0, 0, "ok", "x", "", ""), wantErr: "empty line", line: 2},
		{name: "negative lease", in: line(0, 0, 0, "invoke", "acquire", "a", "") + line(1, 0, 0, "ok", "acquire", "a", `,"lease_ms":-5`), wantErr: "negative lease_ms", line: 2},
		{name: "meta not info", in: line(0, 0, -1, "ok", "meta", "", meta), wantErr: "type info", line: 1},
		{name: "meta twice", in: line(0, 0, -1, "info", "meta", "", meta) + line(1, 0, -1, "info", "meta", "", meta), wantErr: "second meta", line: 2},
		{name: "meta bad promise", in: line(0, 0, -1, "info", "meta", "", `,"value":{"promise":"maybe"}`), wantErr: `unknown promise "maybe"`, line: 1},
		{name: "meta by a client", in: line(0, 0, 3, "invoke", "meta", "", ""), wantErr: "nemesis process", line: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.in))
			var n int
			var err error
			for {
				_, err = r.Next()
				if err != nil {
					break
				}
				n++
			}
			if tt.wantErr == "" {
				if err != io.EOF {
					t.Fatalf("valid history refused: %v", err)
				}
				if n != tt.ops || len(r.Pending()) != tt.pending {
					t.Fatalf("read %d ops, %d pending; want %d, %d", n, len(r.Pending()), tt.ops, tt.pending)
				}
				return
			}
			var le *LineError
			if !errors.As(err, &le) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not a *LineError", err)
			}
			if le.Line != tt.line || !strings.Contains(le.Reason, tt.wantErr) {
				t.Fatalf("error %q at line %d; want %q at line %d", le.Reason, le.Line, tt.wantErr, tt.line)
			}
			if _, again := r.Next(); again != err {
				t.Fatalf("error not sticky: %v", again)
			}
		})
	}
	for _, tt := range tests {
		t.Run("parallel/"+tt.name, func(t *testing.T) { sameReads(t, []byte(tt.in)) })
	}
}

// sameReads checks that the parallel reader (with tiny chunks) reads what
// the Reader does.
func sameReads(t *testing.T, in []byte) {
	t.Helper()
	read := func(parallel, chunk int) ([]Op, bool, error) {
		var ops []Op
		emit := func(op Op) error { ops = append(ops, op); return nil }
		if parallel == 0 {
			r := NewReader(bytes.NewReader(in))
			for {
				op, err := r.Next()
				if err == io.EOF {
					return ops, r.Truncated(), nil
				}
				if err != nil {
					return ops, false, err
				}
				ops = append(ops, op)
			}
		}
		trunc, err := streamParallel(bytes.NewReader(in), emit, parallel, chunk)
		return ops, trunc, err
	}
	want, wtrunc, werr := read(0, 0)
	for _, chunk := range []int{1, 2, 3, 4096} {
		got, gtrunc, gerr := read(3, chunk)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || gtrunc != wtrunc || len(got) != len(want) {
			t.Fatalf("chunks of %d: %d ops, truncated %v, %v; the Reader: %d, %v, %v", chunk, len(got), gtrunc, gerr, len(want), wtrunc, werr)
		}
		for i := range got {
			g, _ := json.Marshal(got[i])
			w, _ := json.Marshal(want[i])
			if !bytes.Equal(g, w) {
				t.Fatalf("chunks of %d: op %d %s, the Reader: %s", chunk, i, g, w)
			}
		}
	}
}

func TestReaderLongLine(t *testing.T) {
	big := `,"value":[` + strings.Repeat("12345,", 200000) + `1]`
	in := line(0, 0, 0, "invoke", "read", "a", "") + line(1, 1, 0, "ok", "read", "a", big)
	ops, err := ReadAll(strings.NewReader(in))
	if err != nil || len(ops) != 2 {
		t.Fatalf("ReadAll = %d, %v", len(ops), err)
	}
	var v []int
	if err := json.Unmarshal(ops[1].Value, &v); err != nil || len(v) != 200001 {
		t.Fatalf("value of %d elements, %v", len(v), err)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte(line(0, 0, 0, "invoke", "acquire", "a", "") + line(1, 5, 0, "ok", "acquire", "a", `,"lease_ms":100`)))
	f.Add([]byte(line(0, 0, -1, "info", "meta", "", `,"value":{"promise":"fenced"}`)))
	f.Add([]byte("{\"index\":0}\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b))
		for range 10000 {
			if _, err := r.Next(); err != nil {
				_ = r.Pending()
				break
			}
		}
		sameReads(t, b)
	})
}

// The fast path must agree with encoding/json on every line it accepts.
func FuzzFastParseAgrees(f *testing.F) {
	f.Add([]byte(`{"index":0,"time":5,"process":3,"type":"ok","f":"acquire","lock":"l","lease_ms":100}`))
	f.Add([]byte(`{"index":1,"time":5,"process":-1,"type":"info","f":"meta","value":{"a":[1,"x]"]}}`))
	f.Add([]byte(` {"index":1 , "time":5,"process":1,"type":"ok","f":"read","value":[1,2,3] ,"error":"e"} `))
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := parseFast(b, interner{})
		if !ok {
			return
		}
		slow, err := parseOp(b)
		if err != nil {
			t.Fatalf("fast path accepted %q, encoding/json refused: %v", b, err)
		}
		fj, _ := json.Marshal(fast)
		sj, _ := json.Marshal(slow)
		if !bytes.Equal(fj, sj) {
			t.Fatalf("fast %s != slow %s for %q", fj, sj, b)
		}
	})
}

func TestMetaClientOf(t *testing.T) {
	perClient := &Meta{Config: map[string]string{"clients": "5", ConfigProcesses: ProcessesPerClient}}
	inOrder := &Meta{Config: map[string]string{"clients": "5"}}
	for _, tc := range []struct {
		name   string
		meta   *Meta
		p      int
		client int
		known  bool
	}{
		{"a client's first process", perClient, 3, 3, true},
		{"a replacement, per client", perClient, 13, 3, true},
		{"a first process, numbered in order", inOrder, 4, 4, true},
		{"a replacement numbered in order is no client's", inOrder, 7, 0, false},
		{"no client count", &Meta{}, 1, 0, false},
		{"no meta", nil, 1, 0, false},
		{"the nemesis", perClient, NemesisProcess, 0, false},
	} {
		c, known := tc.meta.ClientOf(tc.p)
		if c != tc.client || known != tc.known {
			t.Errorf("%s: ClientOf(%d) = %d, %t; want %d, %t", tc.name, tc.p, c, known, tc.client, tc.known)
		}
	}
}
