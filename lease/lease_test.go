package lease

import (
	"errors"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
)

func TestTTLSecondsRoundsUp(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want int
	}{{0, 1}, {time.Millisecond, 1}, {time.Second, 1}, {1500 * time.Millisecond, 2}, {3 * time.Minute, 180}}
	for _, tt := range tests {
		if got := ttlSeconds(tt.in); got != tt.want {
			t.Errorf("ttlSeconds(%v) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// A grant must end before Cassandra can expire the cell: up to a second
// before its nominal TTL, since expiry is stored in whole seconds.
func TestDefaultMarginCoversSecondGranularity(t *testing.T) {
	for _, ttl := range []time.Duration{2 * time.Second, 5 * time.Second, 60 * time.Second} {
		c, _, err := newConfig("leases", []Option{recipe.WithTTL(ttl)})
		if err != nil {
			t.Fatal(err)
		}
		v := validity(c.TTL, c.margin)
		if v <= 0 || v > ttl-time.Second {
			t.Errorf("ttl %v: validity %v, want in (0, %v]", ttl, v, ttl-time.Second)
		}
	}
	c, _, _ := newConfig("leases", []Option{recipe.WithTTL(time.Second)})
	if v := validity(c.TTL, c.margin); v <= 0 {
		t.Errorf("validity must stay positive (zero means no expiry), got %v", v)
	}
	// A TTL given per call (lockd's ?ttl=) gets the margin of that TTL, not
	// of the configured default (180 s: a 19 s margin).
	c, _, _ = newConfig("leases", nil)
	if v := validity(3*time.Second, c.margin); v != 1700*time.Millisecond {
		t.Errorf("validity of a 3 s TTL under the default config: %v, want 1.7s", v)
	}
}

func TestHeldErrorIsHeldByOther(t *testing.T) {
	var err error = &HeldError{Lock: "l", Holder: "h"}
	if !errors.Is(err, workload.ErrHeldByOther) || errors.Is(err, workload.ErrUnknown) {
		t.Fatalf("HeldError must wrap ErrHeldByOther only: %v", err)
	}
}

func TestRecipes(t *testing.T) {
	want := map[string]bool{"lease": false, "lease-fenced": true, "racy": false, "election": false, "election-refresh": false, "lease-fenced-broken": true}
	for _, r := range Recipes {
		fenced, ok := want[r.Name]
		if !ok {
			t.Fatalf("unexpected recipe %q", r.Name)
		}
		// Only the control breaks its resource.
		if broken := len(r.Resource) > 0; broken != (r.Name == "lease-fenced-broken") {
			t.Errorf("%s: resource options %d", r.Name, len(r.Resource))
		}
		delete(want, r.Name)
		if err := r.Validate(); err != nil {
			t.Error(err)
		}
		l, err := r.New(nil, recipe.WithKeyspace("ks"))
		if err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		if le, isLease := l.(*Lease); isLease && le.Fenced() != fenced {
			t.Errorf("%s: fenced = %v", r.Name, le.Fenced())
		}
		if _, err := r.New(nil, recipe.WithKeyspace("ks; DROP TABLE x")); err == nil {
			t.Errorf("%s: a bad keyspace was accepted", r.Name)
		}
	}
	if len(want) != 0 {
		t.Errorf("missing recipes %v", want)
	}
}

func TestBadNamesAreErrors(t *testing.T) {
	tests := []struct {
		name string
		make func() error
	}{
		{"table", func() error { _, err := New(nil, WithTable("a b")); return err }},
		{"option of another package", func() error {
			_, err := New(nil, recipe.Own(func(*struct{ x int }) {}))
			return err
		}},
		{"election column", func() error { _, err := NewElection(nil, nil, WithColumns("group", `x"`)); return err }},
	}
	for _, tt := range tests {
		if tt.make() == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
	if _, err := NewElection(nil, []Option{recipe.WithKeyspace("ks")}, WithColumns("group", "leader")); err != nil {
		t.Errorf("a reserved word as a column must be quoted, not refused: %v", err)
	}
}

// A re-entrant acquire renews; when the renew misses because another owner
// took the lease between the two rounds, the acquire must name that holder
// (lockd answers 409 with it), not report a bare failure.
func TestAcquireMissAfterRenew(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantHolder string // "" = not a HeldError
		wantIs     error
	}{
		{"taken by another", &notHeldError{Lock: "l", Owner: "a", Holder: "b"}, "b", workload.ErrHeldByOther},
		{"expired", &notHeldError{Lock: "l", Owner: "a"}, "", workload.ErrNotAcquired},
		{"ours again, other token", &notHeldError{Lock: "l", Owner: "a", Holder: "a"}, "", workload.ErrNotAcquired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, workload.ErrNotHeld) {
				t.Fatalf("notHeldError must wrap ErrNotHeld: %v", tt.err)
			}
			err := acquireMiss("l", tt.err)
			if !errors.Is(err, tt.wantIs) || errors.Is(err, workload.ErrUnknown) {
				t.Fatalf("acquireMiss = %v, want %v", err, tt.wantIs)
			}
			var held *HeldError
			if got := errors.As(err, &held); got != (tt.wantHolder != "") || (got && held.Holder != tt.wantHolder) {
				t.Fatalf("acquireMiss = %v, want holder %q", err, tt.wantHolder)
			}
		})
	}
}

// The LWTs' consistency levels are the lease's, set after workload.LWT's
// defaults: SERIAL and QUORUM, LOCAL_SERIAL and LOCAL_QUORUM with
// recipe.WithDCLocal, a commit level of WithConsistency kept as given.
func TestLWTConsistency(t *testing.T) {
	for _, tc := range []struct {
		name           string
		opts           []Option
		serial, commit gocql.Consistency
	}{
		{"default", nil, gocql.Serial, gocql.Quorum},
		{"dc-local", []Option{recipe.WithDCLocal(true)}, gocql.LocalSerial, gocql.LocalQuorum},
		{"dc-local, commit ALL", []Option{recipe.WithDCLocal(true), WithConsistency(gocql.All)}, gocql.LocalSerial, gocql.All},
		{"commit ONE", []Option{WithConsistency(gocql.One)}, gocql.Serial, gocql.One},
	} {
		l, err := NewFenced(nil, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		q := l.lwt(new(gocql.Query))
		serial, _ := q.GetSerialConsistency()
		if serial != tc.serial || q.GetConsistency() != tc.commit {
			t.Errorf("%s: serial %v commit %v, want %v %v", tc.name, serial, q.GetConsistency(), tc.serial, tc.commit)
		}
		if l.cfg.Quorum() != map[bool]gocql.Consistency{false: gocql.Quorum, true: gocql.LocalQuorum}[tc.serial == gocql.LocalSerial] {
			t.Errorf("%s: reads at %v", tc.name, l.cfg.Quorum())
		}
	}
}
