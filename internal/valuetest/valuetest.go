// Package valuetest holds the check that a typed fault value encodes as the
// map-based value it replaced, so that histories written before it still
// read: shared by history's and nemesis's tests, which each own some values.
package valuetest

import (
	"encoding/json"
	"reflect"
	"testing"
)

// SameEncoding fails t unless typed encodes as old does, and old's encoding
// decodes into typed's type and encodes again unchanged.
func SameEncoding(t *testing.T, name string, old, typed any) {
	t.Helper()
	want, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(typed)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s: %T encodes %s, the map-based value was %s", name, typed, got, want)
	}
	back := reflect.New(reflect.TypeOf(typed))
	if err := json.Unmarshal(want, back.Interface()); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if again, _ := json.Marshal(back.Interface()); string(again) != string(want) {
		t.Errorf("%s: decoded and encoded again %s, want %s", name, again, want)
	}
}
