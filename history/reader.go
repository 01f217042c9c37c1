package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"
)

// ErrInvalid is wrapped by every *LineError: the input breaks the format or
// its rules (as opposed to an I/O error reading it).
var ErrInvalid = errors.New("invalid history")

// LineError names the line (1-based) of a history that breaks a rule, and why.
type LineError struct {
	Line   int64
	Reason string
}

func (e *LineError) Error() string { return fmt.Sprintf("history line %d: %s", e.Line, e.Reason) }

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *LineError) Unwrap() error { return ErrInvalid }

// Reader reads and validates a history line by line. It holds only the state
// the rules need (one outstanding op per process), so a history of any length
// streams through it.
type Reader struct {
	validator
	br        *bufio.Reader
	truncated bool
	err       error
	buf       []byte
	intern    interner
	blank     int64 // line of the first blank line not yet followed by an op; 0 if none
}

// validator holds the state of the rules: it sees ops in file order.
type validator struct {
	line     int64 // 1-based line of the op being validated
	lastTime int64
	procs    map[int]*procState
	pending  int
	meta     *Meta
}

type procState struct {
	invoke  Op    // the outstanding invocation, if open
	line    int64 // its line
	open    bool
	retired bool // completed with info: the process may not invoke again
}

// NewReader reads a history from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 256<<10), validator: validator{procs: map[int]*procState{}}, intern: interner{}}
}

// Next returns the next op, io.EOF after the last one, or an error (a
// *LineError for a rule or format violation). Errors are sticky.
//
// A history may end with invocations that have no completion (the run was
// killed); Next accepts that, and Pending reports them: checkers treat them
// as info. A last line without its newline that is not valid JSON (the run
// died while writing it) is dropped, and Truncated reports it.
func (r *Reader) Next() (Op, error) {
	if r.err != nil {
		return Op{}, r.err
	}
	op, err := r.next()
	if err != nil {
		r.err = err
	}
	return op, err
}

func (r *Reader) next() (Op, error) {
	for {
		raw, terminated, err := r.readLine()
		if err == io.EOF && raw == nil {
			return Op{}, io.EOF
		}
		if err != nil && err != io.EOF {
			return Op{}, fmt.Errorf("history: read: %w", err)
		}
		r.line++
		if len(bytes.TrimSpace(raw)) == 0 {
			// Blank lines may end a history (an editor's trailing
			// newline); one followed by anything else breaks the format.
			if r.blank == 0 {
				r.blank = r.line
			}
			if !terminated {
				return Op{}, io.EOF
			}
			continue
		}
		if r.blank != 0 {
			r.line = r.blank
			return Op{}, r.fail("empty line")
		}
		op, ok := parseFast(raw, r.intern)
		var perr error
		if !ok {
			op, perr = parseSlow(raw)
		}
		if perr != nil {
			if !terminated {
				// The writer died in the middle of this line.
				r.truncated = true
				r.line--
				return Op{}, io.EOF
			}
			return Op{}, r.fail("%s", perr)
		}
		if err := r.validate(op); err != nil {
			return Op{}, err
		}
		return op, nil
	}
}

// readLine returns the next line without its newline, and whether it had
// one. It copes with lines longer than the buffer (large read values).
func (r *Reader) readLine() ([]byte, bool, error) {
	b, err := r.br.ReadSlice('\n')
	if err == nil {
		return b[:len(b)-1], true, nil
	}
	if err != bufio.ErrBufferFull {
		if len(b) == 0 {
			return nil, false, err
		}
		return b, false, err
	}
	r.buf = append(r.buf[:0], b...)
	for {
		b, err = r.br.ReadSlice('\n')
		r.buf = append(r.buf, b...)
		switch err {
		case nil:
			return r.buf[:len(r.buf)-1], true, nil
		case bufio.ErrBufferFull:
			continue
		default:
			return r.buf, false, err
		}
	}
}

func (r *validator) fail(format string, args ...any) error {
	return &LineError{Line: r.line, Reason: fmt.Sprintf(format, args...)}
}

// wireOp has pointers for the required fields so that a missing field is
// told from a zero one.
type wireOp struct {
	Index   *int64          `json:"index"`
	Time    *int64          `json:"time"`
	Process *int            `json:"process"`
	Type    *Type           `json:"type"`
	F       *string         `json:"f"`
	Lock    string          `json:"lock"`
	Key     string          `json:"key"`
	Value   json.RawMessage `json:"value"`
	LeaseMS int64           `json:"lease_ms"`
	Node    string          `json:"node"`
	Error   string          `json:"error"`
}

func parseOp(line []byte) (Op, error) {
	var w wireOp
	if err := json.Unmarshal(line, &w); err != nil {
		return Op{}, fmt.Errorf("not a JSON object of the history format: %v", err)
	}
	switch {
	case w.Index == nil:
		return Op{}, errors.New(`missing "index"`)
	case w.Time == nil:
		return Op{}, errors.New(`missing "time"`)
	case w.Process == nil:
		return Op{}, errors.New(`missing "process"`)
	case w.Type == nil:
		return Op{}, errors.New(`missing "type"`)
	case w.F == nil || *w.F == "":
		return Op{}, errors.New(`missing "f"`)
	}
	op := Op{
		Index: *w.Index, Time: *w.Time, Process: *w.Process, Type: *w.Type, F: *w.F,
		Lock: w.Lock, Key: w.Key, LeaseMS: w.LeaseMS, Node: w.Node, Error: w.Error,
	}
	if len(w.Value) > 0 && !bytes.Equal(w.Value, []byte("null")) {
		op.Value = append(json.RawMessage(nil), w.Value...)
	}
	return op, nil
}

// lockFs are the operations that must name a lock.
func isLockF(f string) bool {
	switch f {
	case FAcquire, FRenew, FRelease, FAdd, FRead:
		return true
	}
	return false
}

func (r *validator) validate(op Op) error {
	if op.Index != r.line-1 {
		return r.fail("index %d, want %d (indexes count 0, 1, 2 ... in file order)", op.Index, r.line-1)
	}
	if op.Time < 0 {
		return r.fail("negative time %d", op.Time)
	}
	if op.Time < r.lastTime {
		return r.fail("time %d is before the previous line's %d (time never decreases)", op.Time, r.lastTime)
	}
	r.lastTime = op.Time
	switch op.Type {
	case Invoke, OK, Fail, Info:
	default:
		return r.fail("unknown type %q (want invoke, ok, fail or info)", op.Type)
	}
	if op.LeaseMS < 0 {
		return r.fail("negative lease_ms %d", op.LeaseMS)
	}
	if op.Process == NemesisProcess {
		if op.F == FMeta {
			if op.Type != Info {
				return r.fail("the meta line must have type info, not %q", op.Type)
			}
			if r.meta != nil {
				return r.fail("a second meta line")
			}
			var m Meta
			if err := json.Unmarshal(op.Value, &m); err != nil {
				return r.fail("meta value: %v", err)
			}
			switch m.Promise {
			case "", PromiseMutex, PromiseFenced:
			default:
				return r.fail("meta: unknown promise %q (want mutex or fenced)", m.Promise)
			}
			r.meta = &m
		}
		// Other nemesis events are free-form: checkers only show them.
		return nil
	}
	if op.Process < 0 {
		return r.fail("process %d: client processes are >= 0, the nemesis is -1", op.Process)
	}
	if op.F == FMeta {
		return r.fail("f meta belongs to the nemesis process -1")
	}
	if isLockF(op.F) && op.Lock == "" && op.Type == Invoke {
		// A completion may omit the lock: it is its invocation's.
		return r.fail("%s %s without a lock", op.F, op.Type)
	}
	if IsRegisterF(op.F) {
		if err := validReg(op); err != "" {
			return r.fail("%s", err)
		}
	}
	ps := r.procs[op.Process]
	if ps == nil {
		ps = &procState{}
		r.procs[op.Process] = ps
	}
	if op.Type == Invoke {
		if op.F == FAdd && len(op.Value) == 0 {
			return r.fail("add invoke without a value (the element it adds)")
		}
		if ps.retired {
			return r.fail("process %d invokes after an info completion (a client goes on under a new process number after info)", op.Process)
		}
		if ps.open {
			return r.fail("process %d invokes %s while its %s from line %d is outstanding (one op per process)",
				op.Process, op.F, ps.invoke.F, ps.line)
		}
		ps.invoke, ps.line, ps.open = op, r.line, true
		r.pending++
		return nil
	}
	if !ps.open {
		return r.fail("%s %s of process %d without an outstanding invoke", op.F, op.Type, op.Process)
	}
	if op.F != ps.invoke.F {
		return r.fail("%s %s completes process %d's %s invoked at line %d (f differs)",
			op.F, op.Type, op.Process, ps.invoke.F, ps.line)
	}
	if op.Key != "" && op.Key != ps.invoke.Key {
		return r.fail("%s %s on key %q completes an invoke on key %q (line %d)",
			op.F, op.Type, op.Key, ps.invoke.Key, ps.line)
	}
	if op.Lock != "" && op.Lock != ps.invoke.Lock {
		return r.fail("%s %s on lock %q completes an invoke on lock %q (line %d)",
			op.F, op.Type, op.Lock, ps.invoke.Lock, ps.line)
	}
	ps.open = false
	ps.invoke = Op{}
	r.pending--
	if op.Type == Info {
		ps.retired = true
	}
	return nil
}

// Pending returns the invocations still without completion, in no particular
// order. At the end of a killed run's history, these are treated as info.
func (r *validator) Pending() []Op {
	out := make([]Op, 0, r.pending)
	for _, ps := range r.procs {
		if ps.open {
			out = append(out, ps.invoke)
		}
	}
	return out
}

// Truncated reports whether an unterminated, unparseable last line was dropped.
func (r *Reader) Truncated() bool { return r.truncated }

// Meta returns the value of the meta line, if one was read.
func (r *validator) Meta() (Meta, bool) {
	if r.meta == nil {
		return Meta{}, false
	}
	return *r.meta, true
}

// Validate checks ops, as a Reader would read them, against the rules of
// the format. It returns a *LineError naming the op's 1-based position.
func Validate(ops []Op) error {
	v := validator{procs: map[int]*procState{}}
	for _, op := range ops {
		v.line++
		if op.F == "" {
			return v.fail(`missing "f"`)
		}
		if err := utf8Op(op); err != nil {
			return v.fail("%s", err)
		}
		if err := v.validate(op); err != nil {
			return err
		}
	}
	return nil
}

// utf8Op is parseSlow's rule for ops made in memory: their strings and value
// must be UTF-8 (and the value's escapes characters), or two different names
// could become one when written.
func utf8Op(op Op) error {
	for _, s := range []struct{ field, v string }{{"type", string(op.Type)}, {"f", op.F}, {"lock", op.Lock}, {"key", op.Key}, {"node", op.Node}, {"error", op.Error}} {
		if !utf8.ValidString(s.v) {
			return fmt.Errorf("%s %q is not valid UTF-8", s.field, s.v)
		}
	}
	if !utf8.Valid(op.Value) {
		return fmt.Errorf("value %q is not valid UTF-8", op.Value)
	}
	if off, ok := loneSurrogate(op.Value); ok {
		return fmt.Errorf("value: the string escape at byte %d (%s) is half of a UTF-16 surrogate pair, no character", off+1, op.Value[off:off+6])
	}
	return nil
}

// Lines is the number of lines read and accepted so far.
func (r *Reader) Lines() int64 { return r.line }

// ReadFile reads and validates a whole history file.
func ReadFile(path string) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	hint := 1024
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		hint = int(st.Size()/90) + 16
	}
	ops, _, err := ReadSized(f, hint)
	return ops, err
}

// ReadAll reads and validates a whole history.
func ReadAll(rd io.Reader) ([]Op, error) {
	ops, _, err := ReadSized(rd, 0)
	return ops, err
}

// ReadSized reads and validates a whole history into a slice made with
// room for sizeHint ops. It also reports whether an unterminated last line
// was dropped (see Reader.Truncated).
func ReadSized(rd io.Reader, sizeHint int) (ops []Op, truncated bool, err error) {
	ops = make([]Op, 0, sizeHint)
	truncated, err = Stream(rd, func(op Op) error { ops = append(ops, op); return nil })
	return ops, truncated, err
}

// Stream reads and validates a history, handing each op to emit in file
// order without keeping it, so that a history of any length streams through
// in bounded memory. An error from emit stops the reading and is returned.
// truncated reports a dropped unterminated last line (see
// Reader.Truncated).
func Stream(rd io.Reader, emit func(Op) error) (truncated bool, err error) {
	if w := parseWorkers(); w > 1 {
		return streamParallel(rd, emit, w, 4096)
	}
	r := NewReader(rd)
	for {
		op, err := r.Next()
		if err == io.EOF {
			return r.Truncated(), nil
		}
		if err != nil {
			return false, err
		}
		if err := emit(op); err != nil {
			return false, err
		}
	}
}

// validReg tells what breaks the register rules in op, "" when nothing.
func validReg(op Op) string {
	if op.Type == Invoke && op.Key == "" {
		return fmt.Sprintf("%s invoke without a key", op.F)
	}
	var v RegValue
	if len(op.Value) > 0 {
		if err := json.Unmarshal(op.Value, &v); err != nil {
			return fmt.Sprintf("%s %s: value is not an object of expect, new, seen: %v", op.F, op.Type, err)
		}
	}
	null := func(b json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(b), NoRow) }
	switch {
	case op.Type == Invoke && op.F != FRegRead && op.F != FRegDelete && (len(v.New) == 0 || null(v.New)):
		return fmt.Sprintf("%s invoke without a new value (null is no row: not a value)", op.F)
	case op.Type == Invoke && op.F == FRegDelete && len(v.New) > 0:
		return fmt.Sprintf("%s invoke with a new value: a delete writes none", op.F)
	case op.Type == Invoke && (op.F == FRegCAS || op.F == FRegDelete) && (len(v.Expect) == 0 || null(v.Expect)):
		return fmt.Sprintf("%s invoke without the expected value", op.F)
	case op.Type == OK && op.F == FRegRead && len(v.Seen) == 0:
		return fmt.Sprintf("%s ok without \"seen\" (null: no row)", op.F)
	case op.Type == OK && op.F != FRegRead && len(v.Seen) > 0:
		return fmt.Sprintf("%s ok with \"seen\": an applied write reports none", op.F)
	}
	return ""
}
