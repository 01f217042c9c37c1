package checker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lockcheck/lockcheck/history"
)

// Issue 47's classes: fencing tokens of any kind and size, names of any
// bytes, and one re-entrant rule. Times are in milliseconds.

// tokGrant is a sequential grant of token tok (JSON text) to p over
// [t, t+1], released at [t+2, t+3].
func (h *b) tokGrant(p int, l string, t float64, tok string) *b {
	return h.grantRaw(p, l, t, t+1, 1000, tok).release(p, l, t+2, t+3)
}

func TestFencingTokensOfAnyKind(t *testing.T) {
	two := func(a, b string) *b { return fenced().tokGrant(0, "l", 0, a).tokGrant(1, "l", 10, b) }
	runClassCases(t, []classCase{
		// Numbers of any size, by exact value.
		{name: "a counter past 2^64 that goes back", h: two(`18446744073709551617`, `18446744073709551616`),
			verdict: Invalid, anomalies: "token-not-increasing"},
		{name: "near miss: a counter past 2^64 that grows", h: two(`18446744073709551616`, `18446744073709551617`), verdict: Valid},
		{name: "near miss: from int64's greatest to past it", h: two(`9223372036854775807`, `9223372036854775808`), verdict: Valid},
		{name: "past int64 back to int64's greatest", h: two(`9223372036854775808`, `9223372036854775807`),
			verdict: Invalid, anomalies: "token-not-increasing"},
		{name: "one big token written two ways", h: two(`1e30`, `1000000000000000000000000000000.0`),
			verdict: Invalid, anomalies: "token-not-increasing"},
		{name: "a hundred-digit token handed out twice", h: two(strings.Repeat("7", 100), strings.Repeat("7", 100)),
			verdict: Invalid, anomalies: "token-not-increasing"},
		{name: "near miss: hundred-digit tokens that differ in the last digit", h: two(strings.Repeat("7", 99)+"6", strings.Repeat("7", 100)), verdict: Valid},
		{name: "decimals that go back", h: two(`1.5`, `1.25`), verdict: Invalid, anomalies: "token-not-increasing"},
		{name: "near miss: decimals that grow", h: two(`1.25`, `1.5`), verdict: Valid},
		{name: "near miss: negative to zero", h: two(`-1e400`, `-0`), verdict: Valid},
		{name: "-0 is 0", h: two(`0`, `-0`), verdict: Invalid, anomalies: "token-not-increasing"},
		{name: "an exponent past int64", h: two(`1e99999999999999999999`, `1e99999999999999999998`), verdict: Invalid, anomalies: "token-not-increasing"},
		// Text: no order, equality.
		{name: "one string token to two successive holders", h: two(`"lease-7"`, `"lease-7"`), verdict: Invalid, anomalies: "token-not-increasing"},
		{name: "one string written two ways", h: two(`"A"`, `"\u0041"`), verdict: Invalid, anomalies: "token-not-increasing"},
		{name: "near miss: strings in any order", h: two(`"b"`, `"a"`), verdict: Valid},
		{name: "near miss: timeuuids whose text does not sort by time",
			h: two(`"e0f4b3a0-cd2b-11ee-8000-000000000001"`, `"1a2b3c40-cd2c-11ee-8000-000000000001"`), verdict: Valid},
		{name: "a string token handed out again after another",
			h:       fenced().tokGrant(0, "l", 0, `"x"`).tokGrant(1, "l", 10, `"y"`).tokGrant(2, "l", 20, `"x"`),
			verdict: Invalid, anomalies: "token-not-increasing"},
		// Other kinds: equality of JSON values.
		{name: "one object with its keys reordered", h: two(`{"epoch":1,"n":2}`, `{"n":2,"epoch":1.0}`), verdict: Invalid, anomalies: "token-not-increasing"},
		{name: "near miss: arrays that differ", h: two(`[1,2]`, `[2,1]`), verdict: Valid},
		{name: "true twice", h: two(`true`, `true`), verdict: Invalid, anomalies: "token-not-increasing"},
		{name: "near miss: equal text on different locks", h: fenced().tokGrant(0, "l", 0, `"t"`).tokGrant(1, "m", 10, `"t"`), verdict: Valid},
		// Kinds mixed: said, not skipped.
		{name: "a string after a number", h: two(`5`, `"6"`), verdict: Unknown, findings: "tokens-unordered"},
		{name: "a number after an object, the numbers still judged",
			h:       fenced().tokGrant(0, "l", 0, `7`).tokGrant(1, "l", 10, `{"t":8}`).tokGrant(2, "l", 20, `6`),
			verdict: Invalid, anomalies: "token-not-increasing", findings: "tokens-unordered"},
		{name: "near miss: a string and a bool are both unordered kinds", h: two(`"true"`, `true`), verdict: Valid},
		// Equal tokens to grants whose calls overlapped.
		{name: "one number token to two grants in flight together",
			h: fenced().op(0, 0, I, "acquire", "l").op(0.5, 1, I, "acquire", "l").
				op(1, 1, K, "acquire", "l", lease(1000), raw(`4`)).op(2, 0, K, "acquire", "l", lease(1000), raw(`4.0`)).
				release(0, "l", 3, 4).release(1, "l", 5, 6),
			verdict: Invalid, anomalies: "token-not-increasing", findings: "overlapping-holds,non-linearizable"},
		{name: "one text token to two grants in flight together",
			h: fenced().op(0, 0, I, "acquire", "l").op(0.5, 1, I, "acquire", "l").
				op(1, 1, K, "acquire", "l", lease(1000), raw(`"k"`)).op(2, 0, K, "acquire", "l", lease(1000), raw(`"k"`)).
				release(0, "l", 3, 4).release(1, "l", 5, 6),
			verdict: Invalid, anomalies: "token-not-increasing", findings: "overlapping-holds,non-linearizable"},
		{name: "a write with a lower big token after a greater one was acknowledged",
			h: fenced().grantRaw(0, "l", 0, 1, 10, `18446744073709551617`).grantRaw(1, "l", 20, 21, 1000, `18446744073709551618`).
				add(1, "l", 22, 23, 2, K).grantRaw(0, "l", 24, 25, 1000, `18446744073709551617`).add(0, "l", 26, 27, 1, K).
				release(0, "l", 28, 29).read(2, "l", 40, 41, 1, 2),
			verdict: Invalid, anomalies: "stale-holder-write", findings: "overlapping-holds,non-linearizable"},
	})
}

// The one re-entrant rule (docs/checkers.md): a holder's own acquire that
// returns the token it holds is not a new grant unless it released in
// between, whatever other grants happened.
func TestReentrantRule(t *testing.T) {
	runClassCases(t, []classCase{
		{name: "near miss: a heartbeat hands back a lower token after another's grant in the overlap",
			// Issue 47: p1 was granted 6 while p0 held 5; p0's heartbeat
			// then returned its own 5. No grant's token went back: the
			// overlap is the finding.
			h: fenced().grant(0, "l", 0, 1, 1000, 5).grant(1, "l", 10, 11, 1000, 6).grant(0, "l", 20, 21, 1000, 5).
				release(0, "l", 30, 31).release(1, "l", 32, 33),
			verdict: Valid, findings: "overlapping-holds,non-linearizable"},
		{name: "the heartbeat's holder then writes after the newer holder's write",
			h: fenced().grant(0, "l", 0, 1, 1000, 5).grant(1, "l", 10, 11, 1000, 6).add(1, "l", 12, 13, 2, K).
				grant(0, "l", 20, 21, 1000, 5).add(0, "l", 22, 23, 1, K).release(0, "l", 30, 31).release(1, "l", 32, 33).
				read(2, "l", 40, 41, 1, 2),
			verdict: Invalid, anomalies: "stale-holder-write", findings: "overlapping-holds,non-linearizable"},
		{name: "near miss: after the heartbeat, the newer holder's writes are not stale",
			// The heartbeat is no grant, so it does not make p0 newer
			// than p1: p1's later write is its newest holder's.
			h: fenced().grant(0, "l", 0, 1, 1000, 5).grant(1, "l", 10, 11, 1000, 6).
				grant(0, "l", 20, 21, 1000, 5).add(0, "l", 22, 23, 1, K).add(1, "l", 24, 25, 2, K).
				release(0, "l", 30, 31).release(1, "l", 32, 33).read(2, "l", 40, 41, 1, 2),
			verdict: Valid, findings: "overlapping-holds,non-linearizable"},
		{name: "the holder released, then was handed its old lower token after another's grant",
			h: fenced().grant(0, "l", 0, 1, 1000, 5).release(0, "l", 2, 3).grant(1, "l", 10, 11, 1000, 6).
				release(1, "l", 12, 13).grant(0, "l", 20, 21, 1000, 5).release(0, "l", 22, 23),
			verdict: Invalid, anomalies: "token-not-increasing"},
		{name: "the holder released, then was handed its old token, nobody between",
			h:       fenced().grant(0, "l", 0, 1, 1000, 5).release(0, "l", 2, 3).grant(0, "l", 20, 21, 1000, 5).release(0, "l", 22, 23),
			verdict: Invalid, anomalies: "token-not-increasing"},
		{name: "near miss: re-entrant with a string token after another's grant",
			h: fenced().grantRaw(0, "l", 0, 1, 1000, `"a"`).grantRaw(1, "l", 10, 11, 1000, `"b"`).grantRaw(0, "l", 20, 21, 1000, `"a"`).
				release(0, "l", 30, 31).release(1, "l", 32, 33),
			verdict: Valid, findings: "overlapping-holds,non-linearizable"},
		{name: "near miss: re-entrant after the lease ran out and another held",
			h: fenced().grant(0, "l", 0, 1, 5, 5).grant(1, "l", 10, 11, 1000, 6).release(1, "l", 12, 13).
				grant(0, "l", 20, 21, 1000, 5).release(0, "l", 22, 23),
			verdict: Valid},
		{name: "near miss: re-entrant after the process held two other locks (its hold forgotten)",
			h: fenced().grant(0, "l", 0, 1, 5, 5).grant(1, "l", 10, 11, 1000, 6).release(1, "l", 12, 13).
				tokGrant(0, "m", 14, `1`).tokGrant(0, "n", 18, `1`).tokGrant(0, "o", 22, `1`).
				grant(0, "l", 30, 31, 1000, 5).release(0, "l", 32, 33),
			verdict: Valid},
		{name: "after two other locks, a released hold's token handed back",
			h: fenced().grant(0, "l", 0, 1, 1000, 5).release(0, "l", 2, 3).grant(1, "l", 10, 11, 1000, 6).release(1, "l", 12, 13).
				tokGrant(0, "m", 14, `1`).tokGrant(0, "n", 18, `1`).tokGrant(0, "o", 22, `1`).
				grant(0, "l", 30, 31, 1000, 5).release(0, "l", 32, 33),
			verdict: Invalid, anomalies: "token-not-increasing"},
	})
}

// Every token anomaly says what the history shows: the tokens as written
// and how they relate, never that tokens "did not grow" where they did.
func TestTokenMessagesSayWhatHappened(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    *b
		want []string
	}{
		{"lower", fenced().tokGrant(0, "l", 0, `7`).tokGrant(1, "l", 10, `3`),
			[]string{"token 3", "lower than token 7 granted to process 0", "before it was invoked", "against their grants"}},
		{"equal, two holders", fenced().tokGrant(0, "l", 0, `"k"`).tokGrant(1, "l", 10, `"k"`),
			[]string{`token "k"`, `equal to token "k" granted to process 0`, "cannot tell their holders apart"}},
		{"equal, the same process after a release", fenced().tokGrant(0, "l", 0, `4`).tokGrant(0, "l", 10, `4`),
			[]string{"equal to token 4 granted to process 0", "released the lock in between"}},
		{"equal, in flight together", fenced().op(0, 0, I, "acquire", "l").op(0.5, 1, I, "acquire", "l").
			op(1, 1, K, "acquire", "l", lease(1000), raw(`4`)).op(2, 0, K, "acquire", "l", lease(1000), raw(`4`)),
			[]string{"while this acquire was in flight"}},
		{"big", fenced().tokGrant(0, "l", 0, `18446744073709551617`).tokGrant(1, "l", 10, `18446744073709551616`),
			[]string{"token 18446744073709551616", "lower than token 18446744073709551617"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Check(context.Background(), tc.h.list())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Anomalies) != 1 {
				t.Fatalf("anomalies %v", res.Anomalies)
			}
			m := res.Anomalies[0].Message
			for _, w := range tc.want {
				if !strings.Contains(m, w) {
					t.Errorf("message %q lacks %q", m, w)
				}
			}
			if strings.Contains(m, "did not grow") {
				t.Errorf("message %q", m)
			}
		})
	}
}

// genToken draws a token of any JSON kind and size, as JSON text.
func genToken(r *rand.Rand) string {
	switch r.IntN(10) {
	case 0, 1, 2: // small integers, as clients write them
		return fmt.Sprint(r.IntN(8))
	case 3: // integers near and past int64's ends
		base := []string{"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "18446744073709551616"}[r.IntN(5)]
		return base
	case 4: // long integers
		return strings.Repeat(fmt.Sprint(1+r.IntN(9)), 1+r.IntN(40))
	case 5: // another way to write a number
		n := r.IntN(8)
		return []string{fmt.Sprintf("%d.0", n), fmt.Sprintf("%de0", n), fmt.Sprintf("%d0e-1", n), fmt.Sprintf("%d.5", n),
			fmt.Sprintf("-%d", n), fmt.Sprintf("%dE+%d", n, r.IntN(25)), fmt.Sprintf("0.%d", n)}[r.IntN(7)]
	case 6: // strings, escaped or not
		s := []string{"a", "b", "A", "ü", "日", "\x00", `"`, "5"}[r.IntN(8)]
		if r.IntN(2) == 0 {
			return fmt.Sprintf(`"\u%04x"`, []rune(s)[0])
		}
		j, _ := json.Marshal(s)
		return string(j)
	case 7:
		return []string{"true", "false"}[r.IntN(2)]
	case 8:
		return []string{`[1,2]`, `[2,1]`, `[1.0,2]`, `[]`}[r.IntN(4)]
	default:
		return []string{`{"a":1,"b":2}`, `{"b":2,"a":1}`, `{"a":1}`, `{"a":"1"}`}[r.IntN(4)]
	}
}

// refValue decodes a token for the reference model: numbers as big.Rat.
func refValue(s string) any {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		panic(err)
	}
	var conv func(any) any
	conv = func(v any) any {
		switch v := v.(type) {
		case json.Number:
			r, ok := new(big.Rat).SetString(v.String())
			if !ok {
				panic(v)
			}
			return refNum{r.RatString()}
		case []any:
			for i := range v {
				v[i] = conv(v[i])
			}
		case map[string]any:
			for k := range v {
				v[k] = conv(v[k])
			}
		}
		return v
	}
	if n, ok := v.(json.Number); ok {
		r, _ := new(big.Rat).SetString(n.String())
		return r
	}
	return conv(v)
}

// refNum is a number inside an array or object, by exact value.
type refNum struct{ rat string }

// refFencing is the rule as docs/checkers.md writes it, on sequential grants
// (no two calls overlap): how many new grants break it, and whether numbers
// and other kinds were mixed.
type refGrant struct {
	proc    int
	tok     string
	release bool // the process released the lock before this acquire
}

func refFencing(gs []refGrant) (bad int, mixed bool) {
	type held struct {
		v        any
		released bool
	}
	last := map[int]*held{}
	var earlier []any // tokens of the new grants so far
	kinds := map[bool]bool{}
	for _, g := range gs {
		v := refValue(g.tok)
		if h := last[g.proc]; h != nil && g.release {
			h.released = true
		}
		if h := last[g.proc]; h != nil && !h.released && refEqual(h.v, v) {
			continue // re-entrant: not a new grant
		}
		_, num := v.(*big.Rat)
		kinds[num] = true
		for _, e := range earlier {
			en, isNum := e.(*big.Rat)
			if (num && isNum && v.(*big.Rat).Cmp(en) <= 0) || (!num && !isNum && refEqual(e, v)) {
				bad++
				break
			}
		}
		earlier = append(earlier, v)
		last[g.proc] = &held{v: v}
	}
	return bad, kinds[true] && kinds[false]
}

func refEqual(a, b any) bool {
	ar, aok := a.(*big.Rat)
	br, bok := b.(*big.Rat)
	if aok || bok {
		return aok && bok && ar.Cmp(br) == 0
	}
	return reflect.DeepEqual(a, b)
}

// Property: on random sequential histories of one lock, with tokens of every
// kind and size, re-entrant acquires with and without another grant (and a
// release) between, the fencing check agrees with the written rule: the
// count of new grants that break it, and unknown when kinds are mixed.
func TestFencingAgreesWithTheRule(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 3))
	for iter := range 2000 {
		h := fenced()
		var gs []refGrant
		var toks []string
		tm := 0.0
		for range 2 + r.IntN(6) {
			p := r.IntN(3)
			var tok string
			switch {
			case len(toks) > 0 && r.IntN(3) == 0:
				tok = toks[r.IntN(len(toks))] // a token handed out before, perhaps the holder's own
			default:
				tok = genToken(r)
			}
			rel := r.IntN(3) == 0
			if rel {
				h.release(p, "l", tm, tm+1)
				tm += 2
			}
			// Long leases, no release otherwise: holds overlap, as a
			// heartbeat's holder with another grant between.
			h.grantRaw(p, "l", tm, tm+1, 1e6, tok)
			tm += 2
			gs = append(gs, refGrant{proc: p, tok: tok, release: rel})
			toks = append(toks, tok)
		}
		bad, mixed := refFencing(gs)
		ops := h.list()
		res, err := Check(context.Background(), ops)
		if err != nil {
			t.Fatal(err)
		}
		var fc CheckResult
		for _, c := range res.Checks {
			if c.Name == CheckFencing {
				fc = c
			}
		}
		want := Valid
		switch {
		case bad > 0:
			want = Invalid
		case mixed:
			want = Unknown
		}
		if fc.Verdict != want || fc.Anomalies != bad {
			var lines bytes.Buffer
			for _, op := range ops {
				j, _ := json.Marshal(op)
				lines.Write(append(j, '\n'))
			}
			t.Fatalf("case %d: fencing %s with %d anomalies (%s); the rule: %s with %d\n%s", iter, fc.Verdict, fc.Anomalies, fc.Detail, want, bad, lines.String())
		}
		if got := strings.Contains(kinds(res.Findings), KindTokensUnordered); got != mixed {
			t.Fatalf("case %d: tokens-unordered finding %v, mixed %v: %s", iter, got, mixed, kinds(res.Findings))
		}
	}
}

// Property: numbers compare by exact value, whatever their size or
// spelling, as big.Rat compares them.
func TestTokenNumbersCompareExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 4))
	num := func() string {
		var s strings.Builder
		if r.IntN(3) == 0 {
			s.WriteByte('-')
		}
		digits := 1 + r.IntN(30)
		s.WriteString(fmt.Sprint(1 + r.IntN(9)))
		for range digits - 1 {
			s.WriteString(fmt.Sprint(r.IntN(10)))
		}
		if r.IntN(2) == 0 {
			s.WriteString("." + strings.Repeat("0", r.IntN(3)) + fmt.Sprint(r.IntN(100)))
		}
		if r.IntN(2) == 0 {
			fmt.Fprintf(&s, "e%d", r.IntN(60)-30)
		}
		if r.IntN(10) == 0 {
			return []string{"0", "-0", "0.0", "0e5", "9223372036854775807", "-9223372036854775808", "9223372036854775808"}[r.IntN(7)]
		}
		return s.String()
	}
	for range 20000 {
		a, b := num(), num()
		if r.IntN(5) == 0 {
			b = a
		}
		ra, _ := new(big.Rat).SetString(a)
		rb, _ := new(big.Rat).SetString(b)
		ta, tb := parseToken(json.RawMessage(a)), parseToken(json.RawMessage(b))
		if got, want := cmpNumbers(ta, tb), ra.Cmp(rb); got != want {
			t.Fatalf("%s vs %s: %d, want %d", a, b, got, want)
		}
		if sameToken(ta, tb) != (ra.Cmp(rb) == 0) {
			t.Fatalf("%s vs %s: same %v", a, b, sameToken(ta, tb))
		}
		if ra.IsInt() && ra.Num().IsInt64() && (ta.kind() != tokInt || ta.i != ra.Num().Int64()) {
			t.Fatalf("%s: %+v, want int64 %s", a, ta, ra.Num())
		}
	}
}

// Property: two locks whose names differ in any byte are two locks, in memory
// and streamed; a name that is not UTF-8 is refused on its line when
// streamed, never merged with another.
func TestLockNamesOfAnyBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 5))
	name := func() string {
		b := []byte{'l'}
		for range r.IntN(4) {
			switch r.IntN(4) {
			case 0:
				b = append(b, byte(0x80+r.IntN(0x80))) // not UTF-8 alone
			case 1:
				b = utf8.AppendRune(b, rune(r.IntN(0x10ffff)))
			default:
				b = append(b, byte(0x20+r.IntN(0x60)))
			}
		}
		return string(b)
	}
	for range 2000 {
		n1, n2 := name(), name()
		if r.IntN(4) == 0 {
			n2 = n1
		}
		// p0 holds n1 while p1 holds n2, each adding its element.
		h := fenced().grant(0, n1, 0, 1, 1000, 1).grant(1, n2, 2, 3, 1000, 2).
			release(0, n1, 10, 11).release(1, n2, 12, 13)
		ops := h.list()
		valid := utf8.ValidString(n1) && utf8.ValidString(n2)
		res, err := Check(context.Background(), ops)
		if !valid {
			if err == nil || !errors.Is(err, history.ErrInvalid) || !strings.Contains(err.Error(), "not valid UTF-8") {
				t.Fatalf("%q, %q: in memory %v, want refused", n1, n2, err)
			}
		} else {
			if err != nil {
				t.Fatal(err)
			}
			if overlap := strings.Contains(kinds(res.Findings), KindOverlap); overlap != (n1 == n2) {
				t.Fatalf("%q, %q: findings %s", n1, n2, kinds(res.Findings))
			}
		}
		var buf bytes.Buffer
		for _, op := range ops {
			j, _ := json.Marshal(op)
			if op.Lock != "" {
				// Put the name's bytes back as they were: json.Marshal
				// would have replaced what is not UTF-8.
				esc, _ := json.Marshal(op.Lock)
				j = bytes.Replace(j, append([]byte(`"lock":`), esc...), []byte(`"lock":"`+jsonRaw(op.Lock)+`"`), 1)
			}
			buf.Write(append(j, '\n'))
		}
		sres, err := CheckReader(context.Background(), &buf)
		var le *history.LineError
		switch {
		case !valid && (!errors.As(err, &le) || !strings.Contains(le.Reason, "not valid UTF-8")):
			t.Fatalf("%q, %q: streamed %v, want a line refused", n1, n2, err)
		case valid && err != nil:
			t.Fatalf("%q, %q: streamed %v", n1, n2, err)
		case valid && kinds(sres.Findings) != kinds(res.Findings):
			t.Fatalf("%q, %q: streamed findings %s, in memory %s", n1, n2, kinds(sres.Findings), kinds(res.Findings))
		}
	}
}

// jsonRaw escapes only what JSON requires, keeping other bytes as they are.
func jsonRaw(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Property: elements that differ in any byte are two elements: an element
// added by one holder is never taken for another's (a lost-add or a phantom
// appears exactly when the read lacks or adds one).
func TestElementsOfAnyText(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 6))
	for range 1000 {
		var e1, e2 []rune
		for range 1 + r.IntN(3) {
			e1 = append(e1, rune(r.IntN(0x10ffff)))
			e2 = append(e2, rune(r.IntN(0x10ffff)))
		}
		if r.IntN(3) == 0 {
			e2 = e1
		}
		s1, s2 := string(e1), string(e2) // invalid runes become U+FFFD here, as text
		j1, _ := json.Marshal(s1)
		j2, _ := json.Marshal(s2)
		// One holder adds s1; a read then holds s2 only.
		h := (&b{}).grant(0, "l", 0, 1, 1000, 0).addRaw(0, "l", 2, 3, string(j1), K).release(0, "l", 4, 5).readRaw(1, "l", 6, 7, "["+string(j2)+"]")
		res, err := Check(context.Background(), h.list())
		if err != nil {
			t.Fatal(err)
		}
		want := ""
		if s1 != s2 {
			want = "lost-add,phantom-element"
		}
		got := strings.Split(kinds(res.Anomalies), ",")
		slices.Sort(got)
		if got := strings.Join(got, ","); got != want {
			t.Fatalf("%q then %q: %q, want %q", s1, s2, got, want)
		}
	}
}

// What the resource check says of acknowledged adds that no later read
// covers: a lock with no ok read at all is unknown; on a lock with reads, an
// add that returned after the last read was invoked, and that no read held,
// is counted in the detail and not judged (docs/checkers.md).
func TestAcknowledgedAddsNoReadCovers(t *testing.T) {
	held := func() *b { return (&b{}).grant(0, "l", 0, 1, 1000, 0) }
	for _, tc := range []struct {
		name    string
		h       *b
		verdict Verdict
		detail  string
	}{
		{"no read at all", held().add(0, "l", 2, 3, 1, K), Unknown, "1 of 1 locks with acknowledged adds have no ok read"},
		{"an add after the last read", held().add(0, "l", 2, 3, 1, K).read(1, "l", 4, 5, 1).add(0, "l", 6, 7, 2, K), Valid,
			"2 acknowledged adds on 1 locks, none lost, duplicated or stale; 1 acknowledged adds on 1 locks returned after the last read was invoked and no read held them: not judged"},
		{"an add during the last read, which held it", held().add(0, "l", 2, 3, 1, K).op(4, 1, I, "read", "l").add(0, "l", 5, 6, 2, K).
			op(7, 1, K, "read", "l", val([]int{1, 2})), Valid, "2 acknowledged adds on 1 locks, none lost, duplicated or stale"},
		{"every add covered", held().add(0, "l", 2, 3, 1, K).read(1, "l", 4, 5, 1), Valid, "1 acknowledged adds on 1 locks, none lost, duplicated or stale"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Check(context.Background(), tc.h.list())
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range res.Checks {
				if c.Name == CheckResource && (c.Verdict != tc.verdict || !strings.HasPrefix(c.Detail, tc.detail) || (tc.verdict == Valid && !strings.Contains(tc.detail, "not judged") && strings.Contains(c.Detail, "not judged"))) {
					t.Fatalf("resource %s %q; want %s %q", c.Verdict, c.Detail, tc.verdict, tc.detail)
				}
			}
		})
	}
}

// tok is a token's parts, to compare.
type tok struct {
	s string
	i int64
	k tokKind
}

func TestParseToken(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want tok
	}{
		{``, tok{}},
		{`null`, tok{}},
		{` 5 `, tok{i: 5, k: tokInt}},
		{`-9223372036854775808`, tok{i: -9223372036854775808, k: tokInt}},
		{`9223372036854775808`, tok{s: `9223372036854775808`, k: tokNum}},
		{`1e1`, tok{i: 10, k: tokInt}},
		{`100e-1`, tok{i: 10, k: tokInt}},
		{`-0.0`, tok{i: 0, k: tokInt}},
		{`0.5`, tok{s: `0.5`, k: tokNum}},
		{`1E+2`, tok{i: 100, k: tokInt}},
		{`"lease"`, tok{s: "lease", k: tokText}},
		{`"a\"b\u00e9"`, tok{s: `a"bé`, k: tokText}},
		{`"5"`, tok{s: "5", k: tokText}},
		{`true`, tok{s: "true", k: tokOther}},
		{`[1, 2.0]`, tok{s: "[1,2]", k: tokOther}},
		{`{"b":1,"a":"x"}`, tok{s: `{"a":"x","b":1}`, k: tokOther}},
	} {
		v := parseToken(json.RawMessage(tc.raw))
		got := tok{i: v.i, k: v.kind()}
		if v.kind() != tokNone && v.kind() != tokInt {
			got.s = v.text()
		}
		if got != tc.want {
			t.Errorf("parseToken(%s) = %+v, want %+v", tc.raw, got, tc.want)
		}
	}
}

// FuzzTokenNumbers: any two JSON numbers compare as big.Rat compares them
// (exponents bounded so that big.Rat can expand them).
func FuzzTokenNumbers(f *testing.F) {
	for _, s := range [][2]string{{"1", "2"}, {"18446744073709551617", "18446744073709551616"}, {"1e30", "1000000000000000000000000000000"},
		{"-0", "0"}, {"0.1", "1e-1"}, {"-5.5e3", "-5500"}, {"9223372036854775807", "9223372036854775808"}, {"1.000", "1"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		da, oka := parseDec([]byte(a))
		db, okb := parseDec([]byte(b))
		if !oka || !okb || !json.Valid([]byte(a)) || !json.Valid([]byte(b)) {
			return
		}
		for _, d := range []dec{da, db} {
			if d.adj.CmpAbs(big.NewInt(2000)) > 0 {
				return
			}
		}
		ra, ok1 := new(big.Rat).SetString(a)
		rb, ok2 := new(big.Rat).SetString(b)
		if !ok1 || !ok2 {
			t.Fatalf("big.Rat refused %q or %q", a, b)
		}
		ta, tb := parseToken(json.RawMessage(a)), parseToken(json.RawMessage(b))
		if !ta.number() || !tb.number() {
			t.Fatalf("%q, %q: not numbers: %+v %+v", a, b, ta, tb)
		}
		if got, want := cmpNumbers(ta, tb), ra.Cmp(rb); got != want {
			t.Fatalf("%s vs %s: %d, want %d", a, b, got, want)
		}
	})
}
