package shrink

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
)

// steps makes n steps of kind "k<i>", one every 10 s, each 8 s long.
func steps(n int) []nemesis.Step {
	var out []nemesis.Step
	for i := range n {
		out = append(out, nemesis.Step{Kind: fmt.Sprintf("k%d", i), At: nemesis.Duration(time.Duration(10*i+5) * time.Second),
			For: nemesis.Duration(8 * time.Second)})
	}
	return out
}

func kinds(c Candidate) []string {
	var out []string
	for _, s := range c.Schedule.Steps {
		out = append(out, s.Kind)
	}
	return out
}

// fake is a flaw that shows when the schedule holds every kind of need,
// each window at least minFor long, with at least minClients clients, in a
// run at least minTime long; it shows in a share rate of the tries that
// could (seeded), never otherwise.
type fake struct {
	need       []string
	minFor     time.Duration
	minClients int
	minTime    time.Duration
	rate       float64

	mu    *sync.Mutex
	r     *rand.Rand
	runs  int
	tried []Candidate
}

func (f *fake) try(_ context.Context, c Candidate) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs++
	f.tried = append(f.tried, c)
	for _, k := range f.need {
		i := slices.IndexFunc(c.Schedule.Steps, func(s nemesis.Step) bool { return s.Kind == k })
		if i < 0 || c.Schedule.Steps[i].For.D() < f.minFor {
			return false, nil
		}
	}
	if c.Clients < f.minClients || c.Time < f.minTime {
		return false, nil
	}
	return f.r.Float64() < f.rate, nil
}

func start(n int) Candidate {
	return Candidate{Schedule: nemesis.Schedule{Steps: steps(n)}, Clients: 10, Locks: 4, Time: time.Duration(10*n+10) * time.Second}
}

func TestSearchFindsTheSmallestFailingRun(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		f       fake
		want    []string
		clients int
		rateLow int // confirmed catches at least
		maxRuns int
		// loose: a flaw caught now and then may be given up on before
		// the smallest size (the search tries a candidate a few times):
		// only the bounds of the flaw hold.
		loose bool
	}{
		{name: "two of twelve faults, certain", n: 12, f: fake{need: []string{"k3", "k8"}, minFor: 3 * time.Second, minClients: 3, minTime: 20 * time.Second, rate: 1},
			want: []string{"k3", "k8"}, clients: 3, rateLow: 10},
		{name: "one of eight, caught half the time", n: 8, f: fake{need: []string{"k5"}, minFor: time.Second, minClients: 2, minTime: 5 * time.Second, rate: 0.5},
			want: []string{"k5"}, clients: 2, rateLow: 1, loose: true},
		{name: "no fault needed", n: 6, f: fake{minClients: 4, minTime: 5 * time.Second, rate: 1},
			want: nil, clients: 4, rateLow: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.f
			f.r, f.mu = rand.New(rand.NewPCG(1, 2)), &sync.Mutex{}
			res, err := Search(context.Background(), start(tt.n), f.try, Options{MaxRuns: 500, MaxWall: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			m := res.Minimal
			if !slices.Equal(kinds(m), tt.want) {
				t.Errorf("minimal schedule %v, want %v", kinds(m), tt.want)
			}
			if !tt.loose && (m.Clients != tt.clients || m.Locks != 1) || m.Clients < tt.clients || m.Clients > 10 {
				t.Errorf("minimal %d clients %d locks, want %d and 1", m.Clients, m.Locks, tt.clients)
			}
			for _, s := range m.Schedule.Steps {
				if s.For.D() < f.minFor || !tt.loose && s.For.D() >= 2*f.minFor && s.For.D() > time.Second {
					t.Errorf("window of %s %v: want it shortened to [%v, %v)", s.Kind, s.For.D(), f.minFor, 2*f.minFor)
				}
			}
			if m.Time < f.minTime || m.Time < m.Schedule.End() {
				t.Errorf("minimal time %v: below the flaw's %v or the schedule's end %v", m.Time, f.minTime, m.Schedule.End())
			}
			if res.Tries != 10 || res.Caught < tt.rateLow || res.Caught > res.Tries {
				t.Errorf("catch rate %d of %d", res.Caught, res.Tries)
			}
			if res.Runs != f.runs || res.Exhausted {
				t.Errorf("runs %d (the fake saw %d), exhausted %v", res.Runs, f.runs, res.Exhausted)
			}
			// Every candidate kept the start's order of the steps it
			// kept, and never had more steps than the start.
			for _, c := range f.tried {
				ks := kinds(c)
				if !slices.IsSortedFunc(ks, func(a, b string) int { return cmpKind(a, b) }) || len(ks) > tt.n {
					t.Fatalf("candidate %v", ks)
				}
			}
		})
	}
}

func cmpKind(a, b string) int {
	var x, y int
	fmt.Sscanf(a, "k%d", &x)
	fmt.Sscanf(b, "k%d", &y)
	return x - y
}

// The budget bounds the search's runs (the confirmation comes after it)
// and the search says it ran out.
func TestSearchBudget(t *testing.T) {
	f := fake{need: []string{"k3", "k8"}, minClients: 2, minTime: time.Second, rate: 0.3, r: rand.New(rand.NewPCG(3, 4)), mu: &sync.Mutex{}}
	res, err := Search(context.Background(), start(16), f.try, Options{MaxRuns: 7, Confirm: 4, MaxWall: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Exhausted || res.Runs != 7+4 || res.Tries != 4 {
		t.Errorf("exhausted %v after %d runs, %d confirmation tries", res.Exhausted, res.Runs, res.Tries)
	}
	// What it returns still fails: it is the start or a candidate that
	// failed once.
	for _, k := range f.need {
		if !slices.Contains(kinds(res.Minimal), k) {
			t.Errorf("minimal %v lost %s", kinds(res.Minimal), k)
		}
	}
}

// A run that cannot be made stops the search with its error.
func TestSearchStopsOnError(t *testing.T) {
	bad := errors.New("cluster gone")
	calls := 0
	_, err := Search(context.Background(), start(4), func(context.Context, Candidate) (bool, error) {
		calls++
		return false, bad
	}, Options{})
	if !errors.Is(err, bad) || calls != 1 {
		t.Errorf("err %v after %d calls", err, calls)
	}
}

// A schedule whose steps follow windows is refused before any run:
// dropping a step would renumber the steps that follow it.
func TestSearchRefusesAFollowingSchedule(t *testing.T) {
	c := start(4)
	c.Schedule.Steps[1].After = &nemesis.Follow{Step: 1, Phase: nemesis.Ended}
	calls := 0
	_, err := Search(context.Background(), c, func(context.Context, Candidate) (bool, error) {
		calls++
		return true, nil
	}, Options{})
	if err == nil || strings.Contains(err.Error(), "\n") || calls != 0 {
		t.Errorf("err %v after %d runs, want one line and none", err, calls)
	}
}

// A step's stall ("ms", a client pause's) is halved with its window; a
// value without one is kept.
func TestHalveMS(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"client":3,"ms":5014,"process":3}`, `{"client":3,"ms":2507,"process":3}`},
		{`{"ms":600}`, `{"ms":500}`},
		{`{"node":"n1","offset":"+5s"}`, `{"node":"n1","offset":"+5s"}`},
		{`not json`, `not json`},
	} {
		if got := string(halveMS([]byte(tt.in), 500*time.Millisecond)); got != tt.want {
			t.Errorf("halveMS(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
