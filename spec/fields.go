package spec

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WorkloadRegister is the workload that tests no lock (workload.ShapeRegister).
const WorkloadRegister = "register"

// Field is one setting of a Spec: its `lockcheck run` flag (also its JSON
// key in the meta line), its help, where it lives in a Spec, and its check.
// The flags, docs/cli.md, the meta line's JSON, Fill and Validate are
// all derived from the table (Fields), so that a new setting is one Spec
// field and one row of Fields, beside it in spec.go.
type Field struct {
	// Flag is the flag's name and the JSON key.
	Flag string
	// Help is the flag's help (docs/cli.md's meaning column).
	Help string
	// NoFlag: the setting is recorded and set through the Go API, but is
	// not a `lockcheck run` flag (the lock's name and promise come from
	// --lock, --lock-cmd, --lock-url, --name and --promise; the run's name
	// is derived).
	NoFlag bool

	// ptr is where the field lives in s: *string, *[]string, *int,
	// *int64, *bool or *time.Duration.
	ptr func(s *Spec) any
	// fill: Fill sets a zero value from Defaults.
	fill bool
	// check says what is wrong with the value ("must be ...", without the
	// flag's name); nil when anything goes.
	check func(s *Spec) error
}

// Lookup is the field of a flag name.
func Lookup(flag string) (Field, bool) {
	i := slices.IndexFunc(Fields, func(f Field) bool { return f.Flag == flag })
	if i < 0 {
		return Field{}, false
	}
	return Fields[i], true
}

func inRange(v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("must be %d..%d, got %d", lo, hi, v)
	}
	return nil
}

func positive(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("must be positive, got %v", d)
	}
	return nil
}

func notNegative(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("must not be negative, got %v", d)
	}
	return nil
}

// Get is the field's value in s as a flag would print it ("" for an empty
// list).
func (f Field) Get(s *Spec) string {
	switch p := f.ptr(s).(type) {
	case *string:
		return *p
	case *[]string:
		return strings.Join(*p, ",")
	case *int:
		return strconv.Itoa(*p)
	case *int64:
		return strconv.FormatInt(*p, 10)
	case *bool:
		return strconv.FormatBool(*p)
	case *time.Duration:
		return p.String()
	}
	panic("spec: field " + f.Flag + " of an unknown type")
}

// Set parses v as a flag would into s's field.
func (f Field) Set(s *Spec, v string) error {
	switch p := f.ptr(s).(type) {
	case *string:
		*p = v
	case *[]string:
		*p = SplitList(v)
	case *int:
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("--%s: want a whole number, got %q", f.Flag, v)
		}
		*p = n
	case *int64:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("--%s: want a whole number, got %q", f.Flag, v)
		}
		*p = n
	case *bool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("--%s: want true or false, got %q", f.Flag, v)
		}
		*p = b
	case *time.Duration:
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("--%s: want a duration (20s, 1m30s), got %q", f.Flag, v)
		}
		*p = d
	}
	return nil
}

// SplitList is a comma list as --nemesis takes it: "none" and "" are no
// kinds, spaces around names are dropped.
func SplitList(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" || v == "none" {
		return nil
	}
	var out []string
	for k := range strings.SplitSeq(v, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

func (f Field) isZero(s *Spec) bool {
	return reflect.ValueOf(f.ptr(s)).Elem().IsZero()
}

func (f Field) copyFrom(dst, src *Spec) {
	reflect.ValueOf(f.ptr(dst)).Elem().Set(reflect.ValueOf(f.ptr(src)).Elem())
}

// Register adds the flags of the Spec's fields to fs, each set into s and
// showing s's value as its default (so start s from Defaults). help
// appends to a field's help (the lists only other packages know: recipes,
// fault kinds); a field whose help is "-" there is left out.
func Register(fs *flag.FlagSet, s *Spec, help map[string]string) {
	for _, f := range Fields {
		if f.NoFlag || help[f.Flag] == "-" {
			continue
		}
		usage := f.Help + help[f.Flag]
		switch p := f.ptr(s).(type) {
		case *string:
			fs.StringVar(p, f.Flag, *p, usage)
		case *int:
			fs.IntVar(p, f.Flag, *p, usage)
		case *int64:
			fs.Int64Var(p, f.Flag, *p, usage)
		case *bool:
			fs.BoolVar(p, f.Flag, *p, usage)
		case *time.Duration:
			fs.DurationVar(p, f.Flag, *p, usage)
		case *[]string:
			fs.Var(listFlag{p}, f.Flag, usage)
		}
	}
}

// listFlag is a comma list flag (--nemesis); its zero prints as "none".
type listFlag struct{ p *[]string }

func (l listFlag) String() string {
	if l.p == nil || len(*l.p) == 0 {
		return "none"
	}
	return strings.Join(*l.p, ",")
}

func (l listFlag) Set(v string) error { *l.p = SplitList(v); return nil }

// MarshalJSON writes the Spec as an object of its fields by flag name, in
// the table's order, durations as Go duration strings ("3s").
func (s Spec) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range Fields {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.Flag)
		b.Write(k)
		b.WriteByte(':')
		var v any = f.ptr(&s)
		if d, ok := v.(*time.Duration); ok {
			v = d.String()
		}
		val, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("spec: %s: %w", f.Flag, err)
		}
		b.Write(val)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// UnmarshalJSON reads a Spec written by MarshalJSON. A key it does not
// know (a setting of a later lockcheck) is an error, so that a replay
// never runs without a setting the run had; a key missing keeps s's value.
func (s *Spec) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	var errs []error
	for k, raw := range m {
		f, ok := Lookup(k)
		if !ok {
			errs = append(errs, fmt.Errorf("spec: unknown setting %q", k))
			continue
		}
		p := f.ptr(s)
		if d, ok := p.(*time.Duration); ok {
			var str string
			if err := json.Unmarshal(raw, &str); err != nil {
				errs = append(errs, fmt.Errorf("spec: %s: want a duration string: %w", k, err))
				continue
			}
			v, err := time.ParseDuration(str)
			if err != nil {
				errs = append(errs, fmt.Errorf("spec: %s: %w", k, err))
				continue
			}
			*d = v
			continue
		}
		if err := json.Unmarshal(raw, p); err != nil {
			errs = append(errs, fmt.Errorf("spec: %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// IsZero says whether s's field is its type's zero (an empty list, 0,
// false, "").
func (f Field) IsZero(s *Spec) bool { return f.isZero(s) }

// Args are s as `lockcheck run` flags: those in always, and every other
// flag whose value is not its default, in the table's order; skip leaves
// flags out (the store, the faults of a run given a schedule instead).
// A true bool is its flag alone.
func (s Spec) Args(always, skip []string) []string {
	d := Defaults()
	var out []string
	for _, f := range Fields {
		if f.NoFlag || slices.Contains(skip, f.Flag) {
			continue
		}
		v := f.Get(&s)
		if !slices.Contains(always, f.Flag) && v == f.Get(&d) {
			continue
		}
		switch p := f.ptr(&s).(type) {
		case *bool:
			if *p {
				out = append(out, "--"+f.Flag)
			} else {
				out = append(out, "--"+f.Flag+"=false")
			}
		case *[]string:
			if len(*p) == 0 {
				v = "none"
			}
			out = append(out, "--"+f.Flag, v)
		default:
			out = append(out, "--"+f.Flag, v)
		}
	}
	return out
}
