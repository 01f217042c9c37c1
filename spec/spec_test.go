package spec

import (
	"encoding/json"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Every field of Spec is one row of Fields, under its JSON tag's name: a
// field added to the struct without its row (no flag, no meta line) fails
// here.
func TestFieldsCoverSpec(t *testing.T) {
	typ := reflect.TypeFor[Spec]()
	if typ.NumField() != len(Fields) {
		t.Errorf("Spec has %d fields, the table %d", typ.NumField(), len(Fields))
	}
	seen := map[string]bool{}
	for i := range typ.NumField() {
		sf := typ.Field(i)
		tag := sf.Tag.Get("json")
		f, ok := Lookup(tag)
		if !ok {
			t.Errorf("Spec.%s (json %q) has no row in Fields", sf.Name, tag)
			continue
		}
		if seen[tag] {
			t.Errorf("json %q given twice", tag)
		}
		seen[tag] = true
		// The row points at this very field.
		var s Spec
		if got := reflect.ValueOf(f.ptr(&s)).Pointer(); got != reflect.ValueOf(&s).Elem().Field(i).Addr().Pointer() {
			t.Errorf("row %s points at another field than Spec.%s", tag, sf.Name)
		}
		if f.Help == "" {
			t.Errorf("row %s has no help", tag)
		}
	}
}

func TestDefaultsAreValid(t *testing.T) {
	if err := Defaults().Validate(); err != nil {
		t.Fatal(err)
	}
}

// A bad setting is one line naming its flag.
func TestValidateNamesTheFlag(t *testing.T) {
	for _, tt := range []struct {
		spoil func(*Spec)
		want  string
	}{
		{func(s *Spec) { s.Clients = MaxClients + 1 }, "--clients must be 1..100, got 101"},
		{func(s *Spec) { s.Locks = 0 }, "--locks must be 1..100, got 0"},
		{func(s *Spec) { s.Time = -time.Second }, "--time must be positive, got -1s"},
		{func(s *Spec) { s.Interval = 0 }, "--interval must be positive"},
		{func(s *Spec) { s.TTL = time.Millisecond }, "--ttl must be at least 1s, got 1ms"},
		{func(s *Spec) { s.Quiet = -time.Second }, "--quiet must not be negative, got -1s"},
		{func(s *Spec) { s.PauseExtra = -time.Second }, "--pause-extra must not be negative"},
		{func(s *Spec) { s.HealTimeout = 0 }, "--heal-timeout must be positive"},
		{func(s *Spec) { s.SkewMax = time.Second }, "--skew-min and --skew-max: skew bounds must be 0 < skew-min <= skew-max"},
		{func(s *Spec) { s.SkewMin, s.SkewMax = 2*time.Second, time.Second }, "skew bounds must be"},
		{func(s *Spec) { s.RetireStuck, s.Workload = true, WorkloadRegister }, "--retire-stuck: the register workload takes no lock"},
	} {
		s := Defaults()
		tt.spoil(&s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v, want one line with %q", err, tt.want)
		}
	}
}

// Fill sets what has no meaning at zero and keeps a zero quiet phase and
// pause extra.
func TestFill(t *testing.T) {
	var s Spec
	s.Fill()
	d := Defaults()
	d.Quiet, d.PauseExtra = 0, 0
	if !reflect.DeepEqual(s, d) {
		t.Errorf("filled %+v, want %+v", s, d)
	}
	s = Spec{Clients: 7, Time: time.Second}
	s.Fill()
	if s.Clients != 7 || s.Time != time.Second {
		t.Errorf("Fill changed given values: %+v", s)
	}
}

// The JSON form (the meta line's spec) reads back as the same Spec, keys
// are the flags' names and durations strings.
func TestJSONRoundTrip(t *testing.T) {
	s := Defaults()
	s.Name, s.Lock, s.Promise, s.Nemesis, s.Seed = "t", "lease-fenced", "fenced", []string{"partition", "kill"}, 42
	s.SkewMin, s.SkewMax, s.PinClients, s.TTL = time.Second, 4*time.Second, true, 5*time.Second
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"ttl":"5s"`, `"pin-clients":true`, `"nemesis":["partition","kill"]`, `"clients":5`, `"test":"t"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	var back Spec
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Errorf("read back %+v, want %+v", back, s)
	}
	if err := json.Unmarshal([]byte(`{"ttl":"3s","warp":true}`), &back); err == nil || !strings.Contains(err.Error(), `unknown setting "warp"`) {
		t.Errorf("unknown key: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"ttl":3}`), &back); err == nil {
		t.Error("a duration as a number read")
	}
}

// The flags are the table's: their defaults are Defaults', and parsing
// sets the Spec.
func TestRegister(t *testing.T) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s := Defaults()
	Register(fs, &s, map[string]string{"store": "-", "nemesis": ": partition, kill"})
	if fs.Lookup("store") != nil || fs.Lookup("lock") != nil {
		t.Error("a left-out or no-flag field registered")
	}
	if got := fs.Lookup("ttl").DefValue; got != "3s" {
		t.Errorf("ttl default %q", got)
	}
	if got := fs.Lookup("nemesis"); got.DefValue != "none" || !strings.HasSuffix(got.Usage, ": partition, kill") {
		t.Errorf("nemesis flag %+v", got)
	}
	if err := fs.Parse([]string{"--ttl", "5s", "--nemesis", "partition, kill", "--pin-clients", "--clients", "7"}); err != nil {
		t.Fatal(err)
	}
	if s.TTL != 5*time.Second || len(s.Nemesis) != 2 || !s.PinClients || s.Clients != 7 {
		t.Errorf("parsed %+v", s)
	}
}

// Args gives back the flags that make the Spec again.
func TestArgsParseBack(t *testing.T) {
	s := Defaults()
	s.Clients, s.TTL, s.PinClients, s.Nemesis, s.Seed, s.Quiet = 2, 5*time.Second, true, []string{"kill"}, 9, 0
	args := s.Args([]string{"workload", "seed"}, []string{"store"})
	want := "--workload cycle --nemesis kill --clients 2 --seed 9 --ttl 5s --quiet 0s --pin-clients"
	if got := strings.Join(args, " "); got != want {
		t.Errorf("args %q, want %q", got, want)
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	back := Defaults()
	Register(fs, &back, nil)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Errorf("parsed back %+v, want %+v", back, s)
	}
}
