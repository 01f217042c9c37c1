package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// readAll reads a history with the Reader and, beside it, the parallel
// reader (sameReads), returning the Reader's ops and error.
func readBoth(t *testing.T, in string) ([]Op, error) {
	t.Helper()
	sameReads(t, []byte(in))
	r := NewReader(strings.NewReader(in))
	var ops []Op
	for {
		op, err := r.Next()
		if err == io.EOF {
			return ops, nil
		}
		if err != nil {
			return ops, err
		}
		ops = append(ops, op)
	}
}

// A history is JSON text: a line that is not UTF-8, or whose string escapes
// stand for no character, is bad input naming its line, wherever the bytes
// are (issue 47: encoding/json decoded both to U+FFFD, so two lock names
// became one).
func TestReaderRefusesNonUTF8(t *testing.T) {
	first := line(0, 0, 0, "invoke", "acquire", "a", "")
	for _, tc := range []struct {
		name, line string
		want       string // substring of the error; "" when the line is good
	}{
		{"lock name", line(1, 1, 1, "invoke", "acquire", "l\xff", ""), "not valid UTF-8 (byte 0xff"},
		{"lock name, a cut rune", line(1, 1, 1, "invoke", "acquire", "l\xc3", ""), "not valid UTF-8 (byte 0xc3"},
		{"added element", line(1, 1, 1, "invoke", "add", "a", ",\"value\":\"x\xfe\""), "not valid UTF-8"},
		{"token", line(1, 1, 0, "ok", "acquire", "a", ",\"value\":\"\xed\xa0\x80\""), "not valid UTF-8"}, // an encoded surrogate
		{"error text", line(1, 1, 0, "fail", "acquire", "a", ",\"error\":\"\x80\""), "not valid UTF-8"},
		{"nemesis value", line(1, 1, -1, "info", "start-partition", "", ",\"value\":[\"n\xff\"]"), "not valid UTF-8"},
		{"an unknown key", line(1, 1, 1, "invoke", "acquire", "a", ",\"k\xff\":1"), "not valid UTF-8"},
		{"lone high surrogate in a lock name", line(1, 1, 1, "invoke", "acquire", `l\ud800`, ""), `(\ud800) is half of a UTF-16 surrogate pair`},
		{"lone low surrogate in an element", line(1, 1, 1, "invoke", "add", "a", `,"value":["\uDC00"]`), `(\uDC00) is half`},
		{"high surrogate then another escape", line(1, 1, 1, "invoke", "acquire", `\ud83d\u0041`, ""), "half of a UTF-16 surrogate pair"},
		{"a pair is one character", line(1, 1, 1, "invoke", "acquire", `\ud83d\ude00`, ""), ""},
		{"an escaped backslash before u", line(1, 1, 1, "invoke", "acquire", `\\ud800`, ""), ""},
		{"U+FFFD itself is a character", line(1, 1, 1, "invoke", "acquire", "\uFFFD", ""), ""},
		{"multibyte UTF-8", line(1, 1, 1, "invoke", "add", "ключ", `,"value":"日本"`), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, err := readBoth(t, first+tc.line)
			if tc.want == "" {
				if err != nil || len(ops) != 2 {
					t.Fatalf("good line refused: %v (%d ops)", err, len(ops))
				}
				return
			}
			var le *LineError
			if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(le.Reason, tc.want) {
				t.Fatalf("got %v; want line 2: ...%s...", err, tc.want)
			}
		})
	}
}

// rawString writes s as a JSON string without touching its bytes: only '"',
// '\' and control bytes are escaped, so bytes that are not UTF-8 stay.
func rawString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
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
	b.WriteByte('"')
	return b.String()
}

// randBytes draws a byte string of every kind: ASCII, valid multibyte
// runes, stray continuation bytes, cut runes, encoded surrogates, 0xff.
func randBytes(r *rand.Rand) string {
	var b []byte
	for range r.IntN(8) {
		switch r.IntN(6) {
		case 0:
			b = append(b, byte(r.IntN(0x80)))
		case 1:
			b = utf8.AppendRune(b, rune(r.IntN(0x10ffff)))
		case 2:
			b = append(b, byte(0x80+r.IntN(0x40)))
		case 3:
			b = append(b, 0xe6, 0x97) // a cut rune
		case 4:
			b = append(b, 0xed, byte(0xa0+r.IntN(0x20)), 0x80)
		default:
			b = append(b, byte(r.IntN(256)))
		}
	}
	return string(b)
}

// Property: a lock name, an owner's error text or an element of any bytes is
// read back byte for byte when it is UTF-8, and refused on its line when it
// is not; never merged with another through U+FFFD.
func TestReaderNamesOfAnyBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 1))
	for range 3000 {
		name, elem := "l"+randBytes(r), randBytes(r)
		in := `{"index":0,"time":0,"process":0,"type":"invoke","f":"add","lock":` + rawString(name) + `,"value":` + rawString(elem) + "}\n"
		ops, err := readBoth(t, in)
		valid := utf8.ValidString(name) && utf8.ValidString(elem)
		switch {
		case valid && err != nil:
			t.Fatalf("lock %q element %q: refused: %v", name, elem, err)
		case !valid && err == nil:
			t.Fatalf("lock %q element %q: accepted as lock %q element %s", name, elem, ops[0].Lock, ops[0].Value)
		case !valid && !strings.Contains(err.Error(), "history line 1: not valid UTF-8"):
			t.Fatalf("lock %q: error %v", name, err)
		case valid && (ops[0].Lock != name || string(ops[0].Value) != rawString(elem)):
			t.Fatalf("lock %q element %q read back as %q %s", name, elem, ops[0].Lock, ops[0].Value)
		}
	}
}

// Property: a name written as \u escapes of arbitrary UTF-16 code units is
// read as their decoding when they pair up, and refused otherwise.
func TestReaderEscapedCodeUnits(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 2))
	for range 3000 {
		var units []uint16
		for range 1 + r.IntN(5) {
			switch r.IntN(3) {
			case 0:
				units = append(units, uint16(0xd800+r.IntN(0x800))) // a surrogate of either half
			case 1:
				hi, lo := utf16.EncodeRune(rune(0x10000 + r.IntN(0x100000)))
				units = append(units, uint16(hi), uint16(lo))
			default:
				units = append(units, uint16(0x20+r.IntN(0xd7e0)))
			}
		}
		var esc bytes.Buffer
		for _, u := range units {
			fmt.Fprintf(&esc, `\u%04x`, u)
		}
		dec := utf16.Decode(units)
		pairs := true
		for i := 0; i < len(units); i++ {
			switch u := units[i]; {
			case u >= 0xd800 && u < 0xdc00 && i+1 < len(units) && units[i+1] >= 0xdc00 && units[i+1] < 0xe000:
				i++
			case u >= 0xd800 && u < 0xe000:
				pairs = false
			}
		}
		ops, err := readBoth(t, `{"index":0,"time":0,"process":0,"type":"invoke","f":"acquire","lock":"`+esc.String()+"\"}\n")
		switch {
		case pairs && (err != nil || ops[0].Lock != string(dec)):
			t.Fatalf("%s: %v, ops %+v; want lock %q", esc.String(), err, ops, string(dec))
		case !pairs && (err == nil || !strings.Contains(err.Error(), "half of a UTF-16 surrogate pair")):
			t.Fatalf("%s: %v; want it refused", esc.String(), err)
		}
	}
}
