package bakery

import (
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/recipe"
)

func TestTicketBefore(t *testing.T) {
	tests := []struct {
		a, b Ticket
		want bool
	}{
		{Ticket{1, "b"}, Ticket{2, "a"}, true},
		{Ticket{2, "a"}, Ticket{1, "b"}, false},
		{Ticket{2, "a"}, Ticket{2, "b"}, true}, // tie: the id decides
		{Ticket{2, "b"}, Ticket{2, "a"}, false},
		{Ticket{2, "a"}, Ticket{2, "a"}, false}, // strict
		{Ticket{0, "a"}, Ticket{5, "z"}, false}, // no ticket is never first
		{Ticket{5, "z"}, Ticket{0, "a"}, true},
		{Ticket{10, "a"}, Ticket{9, "z"}, false}, // numbers compare as numbers, not strings
	}
	for _, tt := range tests {
		if got := tt.a.Before(tt.b); got != tt.want {
			t.Errorf("%v.Before(%v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestNextNumber(t *testing.T) {
	if got := NextNumber(nil); got != 1 {
		t.Errorf("empty bakery: %d, want 1", got)
	}
	if got := NextNumber(map[string]int64{"a": 3, "b": 9, "c": 1}); got != 10 {
		t.Errorf("got %d, want 10", got)
	}
}

// The wait phase over a sequence of snapshots (Choosing read, then Numbers).
func TestWaiter(t *testing.T) {
	type snap struct {
		choosing map[string]bool
		numbers  map[string]int64
		done     bool
	}
	me := Ticket{5, "m"}
	tests := []struct {
		name  string
		snaps []snap
	}{
		{"alone", []snap{{map[string]bool{"m": false}, map[string]int64{"m": 5}, true}}},
		{"wait while choosing, then for the smaller ticket to leave", []snap{
			{map[string]bool{"a": true}, map[string]int64{}, false},
			{map[string]bool{"a": false}, map[string]int64{"a": 3}, false},
			{map[string]bool{"a": false}, map[string]int64{"a": 3}, false},
			{map[string]bool{}, map[string]int64{}, true},
		}},
		{"choosing done with a larger ticket: pass", []snap{
			{map[string]bool{"a": true}, map[string]int64{}, false},
			{map[string]bool{"a": false}, map[string]int64{"a": 6}, true},
		}},
		{"equal numbers: the smaller id goes first", []snap{
			{map[string]bool{"a": false, "z": false}, map[string]int64{"a": 5, "z": 5}, false},
			{map[string]bool{"z": false}, map[string]int64{"z": 5}, true},
		}},
		{"L3 does not look at choosing again", []snap{
			{map[string]bool{"a": false}, map[string]int64{"a": 2}, false},
			// a left and is choosing again: it will see my number, take a larger one.
			{map[string]bool{"a": true}, map[string]int64{}, true},
		}},
		{"a newcomer after the first snapshot is not waited for", []snap{
			{map[string]bool{"a": true}, map[string]int64{}, false},
			{map[string]bool{"a": false, "late": true}, map[string]int64{"a": 7}, true},
		}},
		{"one passed, one still ahead", []snap{
			{map[string]bool{"a": false, "b": false}, map[string]int64{"a": 9, "b": 1}, false},
			{map[string]bool{"a": false}, map[string]int64{"a": 1}, true}, // a passed already (L3 is per j, done once)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w *waiter
			for i, s := range tt.snaps {
				if w == nil {
					w = newWaiter(me, s.choosing, s.numbers)
				}
				if got := w.step(s.choosing, s.numbers); got != s.done {
					t.Fatalf("snapshot %d: done = %v, want %v (states %v)", i, got, s.done, w.others)
				}
			}
		})
	}
}

func TestRecipes(t *testing.T) {
	want := map[string]gocql.Consistency{"bakery": gocql.Quorum, "bakery-one": gocql.One}
	for _, r := range Recipes {
		cl, ok := want[r.Name]
		if !ok {
			t.Fatalf("unexpected recipe %q", r.Name)
		}
		delete(want, r.Name)
		if err := r.Validate(); err != nil {
			t.Error(err)
		}
		l, err := r.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		b := l.(*Bakery)
		if _, err := r.New(nil, recipe.WithKeyspace("")); err == nil {
			t.Errorf("%s: an empty keyspace was accepted", r.Name)
		}
		if b.cfg.consistency != cl {
			t.Errorf("%s: consistency %v, want %v", r.Name, b.cfg.consistency, cl)
		}
	}
	if len(want) != 0 {
		t.Errorf("missing recipes %v", want)
	}
}
