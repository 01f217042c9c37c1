package recipe

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/workload"
)

func TestIdentRejectsInjection(t *testing.T) {
	for _, bad := range []string{"", "a b", "x;DROP", `a"b`, "1abc", "ks.t", strings.Repeat("a", 49)} {
		if _, err := Ident(bad); err == nil {
			t.Errorf("Ident(%q) accepted", bad)
		}
	}
	if q, err := Ident("group"); err != nil || q != `"group"` {
		t.Errorf(`Ident("group") = %q, %v`, q, err)
	}
	if q, err := Table("ks", "leases"); err != nil || q != `"ks"."leases"` {
		t.Errorf(`Table = %q, %v`, q, err)
	}
}

type ownConfig struct{ table string }
type otherConfig struct{ n int }

func TestConfigure(t *testing.T) {
	clk := &workload.SkewClock{}
	tests := []struct {
		name    string
		opts    []Option
		wantErr string
		check   func(Options, ownConfig) bool
	}{
		{"defaults", nil, "", func(o Options, c ownConfig) bool {
			return o.Keyspace == "lockcheck" && o.Clock != nil && o.Log != nil && c.table == "t0"
		}},
		{"shared and own", []Option{WithKeyspace("ks"), WithClock(clk), WithTTL(3 * time.Second),
			Own(func(c *ownConfig) { c.table = "t1" })}, "", func(o Options, c ownConfig) bool {
			return o.Keyspace == "ks" && o.Clock == clk && o.TTL == 3*time.Second && c.table == "t1"
		}},
		{"bad keyspace", []Option{WithKeyspace("ks; DROP")}, "keyspace", nil},
		{"another package's option", []Option{Own(func(*otherConfig) {})}, "otherConfig", nil},
		{"bad poll bounds", []Option{WithPoll(time.Second, time.Millisecond)}, "poll", nil},
		{"negative TTL", []Option{WithTTL(-time.Second)}, "TTL", nil},
		{"nil clock and logger", []Option{WithClock(nil), WithLogger(nil)}, "", func(o Options, _ ownConfig) bool {
			return o.Clock != nil && o.Log != nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, c := Defaults(), ownConfig{table: "t0"}
			err := Configure(&o, &c, tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one about %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(o, c) {
				t.Errorf("options %+v, own %+v", o, c)
			}
		})
	}
}

type nopLock struct{}

func (*nopLock) Acquire(context.Context, string, string) (workload.Grant, error) {
	return workload.Grant{}, nil
}
func (*nopLock) Release(context.Context, workload.Grant) error { return nil }

func TestConstructorReturnsNoTypedNil(t *testing.T) {
	boom := errors.New("boom")
	newLock := Constructor(func(*gocql.Session, ...Option) (*nopLock, error) { return nil, boom })
	l, err := newLock(nil)
	if l != nil || !errors.Is(err, boom) {
		t.Fatalf("got %v, %v; want a nil interface and the error", l, err)
	}
}

func TestValidate(t *testing.T) {
	good := Entry{Name: "my-lock", Promise: history.PromiseMutex,
		New:    Constructor(func(*gocql.Session, ...Option) (*nopLock, error) { return &nopLock{}, nil }),
		Schema: func(context.Context, *gocql.Session, string) error { return nil }}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := map[string]func(*Entry){
		"empty promise": func(e *Entry) { e.Promise = "" },
		"bad name":      func(e *Entry) { e.Name = "My Lock" },
		"no New":        func(e *Entry) { e.New = nil },
		"no Schema":     func(e *Entry) { e.Schema = nil },
	}
	for name, spoil := range tests {
		e := good
		spoil(&e)
		if e.Validate() == nil {
			t.Errorf("%s: validated", name)
		}
	}
}

// The poller's waits grow to the bound and stop at once when ctx ends.
func TestPoller(t *testing.T) {
	p := NewPoller(Options{MinPoll: time.Millisecond, MaxPoll: 4 * time.Millisecond})
	for range 5 {
		if err := p.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if p.cur != 4*time.Millisecond {
		t.Errorf("backoff %v, want capped at 4ms", p.cur)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	slow := NewPoller(Options{MinPoll: time.Hour, MaxPoll: time.Hour})
	if err := slow.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait on a done context: %v", err)
	}
}
