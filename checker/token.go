package checker

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
)

// Fencing tokens are JSON values of any kind (docs/checkers.md, "Fencing
// tokens"). Numbers are ordered by exact value, whatever their size: a token
// from an arbitrary-precision counter (a varint column) past 2^64 that goes
// back is caught. Any other kind (a string: a lease id, a timeuuid's text;
// true, false, an array, an object) has no order the checker may assume, so
// it is judged by equality only: a new grant's token must differ from every
// token granted before it on that lock. Numbers and values of other kinds on
// one lock cannot be ordered against each other: the checker says so (a
// tokens-unordered finding and an unknown verdict) rather than skip them.
//
// The common token, an integer that fits int64, is kept as one and compared
// as one: nothing is allocated for it, so the streaming engine keeps its
// speed.

// tokKind is the kind of a token.
type tokKind uint8

const (
	tokNone  tokKind = iota // no token: no value, or null
	tokInt                  // a number that is an integer in int64: tokVal.i
	tokNum                  // any other number: its text is its JSON text, trimmed
	tokText                 // a string: its text is its value, unescaped
	tokOther                // true, false, an array or an object: its text is its canonical JSON text
)

// tokVal is one token. It is as small as the int64 and flag it replaced
// (every hold carries one): an int64 token points at intTok, shared; any
// other token at a tokExt of its own; no token is nil.
type tokVal struct {
	i int64
	x *tokExt
}

// tokExt is a token's kind and, for a token that is not an int64, its text.
type tokExt struct {
	s string
	k tokKind
}

var intTok = &tokExt{k: tokInt}

func intToken(i int64) tokVal { return tokVal{i: i, x: intTok} }

func extToken(k tokKind, s string) tokVal { return tokVal{x: &tokExt{s: s, k: k}} }

// kind is the token's kind.
func (t tokVal) kind() tokKind {
	if t.x == nil {
		return tokNone
	}
	return t.x.k
}

// text is the text of a token that is not an int64.
func (t tokVal) text() string { return t.x.s }

// has tells whether there is a token.
func (t tokVal) has() bool { return t.x != nil }

// number tells whether the token is a number (ordered by value).
func (t tokVal) number() bool { k := t.kind(); return k == tokInt || k == tokNum }

// kindName names the token's kind for a message.
func (t tokVal) kindName() string {
	switch t.kind() {
	case tokInt, tokNum:
		return "a number"
	case tokText:
		return "a string"
	case tokOther:
		return "a " + map[byte]string{'t': "boolean", 'f': "boolean", '[': "array", '{': "object"}[t.text()[0]]
	}
	return "no token"
}

// String shows the token as JSON, as a history would carry it.
func (t tokVal) String() string {
	switch t.kind() {
	case tokInt:
		return strconv.FormatInt(t.i, 10)
	case tokText:
		b, err := json.Marshal(t.text())
		if err != nil {
			return strconv.Quote(t.text())
		}
		return string(b)
	case tokNone:
		return "none"
	}
	return t.text()
}

// key is the token's identity among the tokens that are not numbers: a
// string and the object holding it are two tokens.
func (t tokVal) key() string {
	if t.kind() == tokText {
		return "s" + t.text()
	}
	return "o" + t.text()
}

// parseToken reads an ok acquire's value as a token.
func parseToken(v json.RawMessage) tokVal {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return tokVal{}
	}
	if len(v) < 20 {
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return intToken(i)
		}
	}
	switch c := v[0]; {
	case c == '"':
		if bytes.IndexByte(v, '\\') < 0 {
			return extToken(tokText, string(v[1:len(v)-1]))
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			return extToken(tokText, s)
		}
		return extToken(tokOther, string(v))
	case c == '-' || (c >= '0' && c <= '9'):
		d, ok := parseDec(v)
		if !ok {
			return extToken(tokOther, string(v)) // the reader validated it: not reached
		}
		if i, ok := d.int64(); ok {
			return intToken(i) // 1e1, 10.0 and 100e-1 are token 10
		}
		return extToken(tokNum, string(v))
	}
	return extToken(tokOther, elemKey(v))
}

// sameToken tells whether two tokens are one JSON value.
func sameToken(a, b tokVal) bool {
	switch {
	case a.x == intTok && b.x == intTok:
		return a.i == b.i
	case a.number() && b.number():
		return cmpNumbers(a, b) == 0
	case a.number() || b.number() || !a.has() || !b.has():
		return false
	}
	return a.key() == b.key()
}

// cmpNumbers compares two number tokens by exact value.
func cmpNumbers(a, b tokVal) int {
	if a.x == intTok && b.x == intTok {
		switch {
		case a.i < b.i:
			return -1
		case a.i > b.i:
			return 1
		}
		return 0
	}
	return a.dec().cmp(b.dec())
}

func (t tokVal) dec() dec {
	if t.x == intTok {
		d, _ := parseDec([]byte(strconv.FormatInt(t.i, 10)))
		return d
	}
	d, _ := parseDec([]byte(t.text()))
	return d
}

// dec is a JSON number exactly: (-1)^neg × 0.digits × 10^adj, digits
// without leading or trailing zeros (none for zero). adj is a big.Int so
// that an exponent of any length compares right, and nothing is ever
// expanded: 1e1000000000 costs what its text does.
type dec struct {
	neg    bool
	digits string
	adj    *big.Int
}

// parseDec reads a JSON number: -?int(.frac)?([eE][+-]?digits)?.
func parseDec(b []byte) (dec, bool) {
	var d dec
	i := 0
	if i < len(b) && b[i] == '-' {
		d.neg = true
		i++
	}
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	intPart := b[start:i]
	if len(intPart) == 0 {
		return d, false
	}
	var frac []byte
	if i < len(b) && b[i] == '.' {
		i++
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		frac = b[s:i]
		if len(frac) == 0 {
			return d, false
		}
	}
	exp := new(big.Int)
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		s := i
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if _, ok := exp.SetString(strings.TrimPrefix(string(b[s:i]), "+"), 10); !ok {
			return d, false
		}
	}
	if i != len(b) {
		return d, false
	}
	all := string(intPart) + string(frac)
	lead := len(all) - len(strings.TrimLeft(all, "0"))
	digits := strings.TrimRight(all[lead:], "0")
	if digits == "" {
		return dec{adj: new(big.Int)}, true // zero, and -0 is 0
	}
	// The value is 0.digits × 10^adj: the point sits after the integer
	// part's digits, less the leading zeros.
	d.digits = digits
	d.adj = exp.Add(exp, big.NewInt(int64(len(intPart)-lead)))
	return d, true
}

// int64 gives the number as an int64 when it is an integer that fits.
func (d dec) int64() (int64, bool) {
	if d.digits == "" {
		return 0, true
	}
	if !d.adj.IsInt64() {
		return 0, false
	}
	adj := d.adj.Int64()
	if adj < int64(len(d.digits)) || adj > 19 {
		return 0, false // a fraction, or too many digits
	}
	s := d.digits + strings.Repeat("0", int(adj)-len(d.digits))
	if d.neg {
		s = "-" + s
	}
	i, err := strconv.ParseInt(s, 10, 64)
	return i, err == nil
}

func (d dec) sign() int {
	switch {
	case d.digits == "":
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// cmp compares two numbers by value.
func (d dec) cmp(o dec) int {
	sd, so := d.sign(), o.sign()
	if sd != so || sd == 0 {
		return cmpInt(sd, so)
	}
	// The same sign: compare magnitudes, the point's place first, then
	// the digits (aligned at the first; without trailing zeros, a prefix
	// is the smaller).
	m := d.adj.Cmp(o.adj)
	if m == 0 {
		m = strings.Compare(d.digits, o.digits)
	}
	return m * sd
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
