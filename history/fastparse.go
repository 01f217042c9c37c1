package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// The reader's fast path: lines as the Writer writes them (known keys,
// integers, strings without escapes) are parsed by hand, several times
// faster than encoding/json, with the repeated strings (type, f, lock, node)
// interned. Anything else (escapes, unknown or repeated keys, nulls, floats,
// syntax errors) falls back to encoding/json, which gives the authoritative
// result and error message.

type interner map[string]string

func (in interner) get(b []byte) string {
	// The words of lockcheck's own histories need no map: a switch on them
	// costs a length compare and a memcmp.
	switch string(b) {
	case string(Invoke):
		return string(Invoke)
	case string(OK):
		return string(OK)
	case string(Fail):
		return string(Fail)
	case string(Info):
		return string(Info)
	case FAcquire:
		return FAcquire
	case FRelease:
		return FRelease
	case FRenew:
		return FRenew
	case FAdd:
		return FAdd
	case FRead:
		return FRead
	}
	if s, ok := in[string(b)]; ok {
		return s
	}
	if len(in) > 1<<16 {
		return string(b) // unbounded distinct values: stop interning
	}
	s := string(b)
	in[s] = s
	return s
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// fastString reads a string without escapes starting at b[i] == '"'.
func fastString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	high := false
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			if high && !utf8.Valid(b[i+1:j]) {
				return nil, i, false // encoding/json substitutes U+FFFD
			}
			return b[i+1 : j], j + 1, true
		case c >= 0x80:
			high = true
		case c == '\\' || c < 0x20:
			return nil, i, false
		}
	}
	return nil, i, false
}

func fastInt(b []byte, i int) (int64, int, bool) {
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	start := i
	var n int64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		if n > (1<<63-1-9)/10 {
			return 0, i, false
		}
		n = n*10 + int64(b[i]-'0')
		i++
	}
	if i == start || (b[start] == '0' && i-start > 1) {
		return 0, i, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, i, false
	}
	if neg {
		n = -n
	}
	return n, i, true
}

// skipValue returns the end of the JSON value starting at b[i], checking
// only its nesting and strings; the caller validates the slice.
func skipValue(b []byte, i int) (int, bool) {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			i++
			for i < len(b) && b[i] != '"' {
				if b[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(b) {
				return i, false
			}
			i++
		case '[', '{':
			depth++
			i++
		case ']', '}':
			if depth == 0 {
				return i, true
			}
			depth--
			i++
			if depth == 0 {
				return i, true
			}
		case ',':
			if depth == 0 {
				return i, true
			}
			i++
		default:
			if depth == 0 && isWS(c) {
				return i, true
			}
			i++
		}
	}
	return i, depth == 0
}

const (
	seenIndex = 1 << iota
	seenTime
	seenProcess
	seenType
	seenF
	seenLock
	seenValue
	seenLease
	seenNode
	seenError
	seenKey
	seenRequired = seenIndex | seenTime | seenProcess | seenType | seenF
)

func parseFast(b []byte, in interner) (Op, bool) {
	var op Op
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return op, false
	}
	i = skipWS(b, i+1)
	seen := 0
	for {
		key, j, ok := fastString(b, i)
		if !ok {
			return op, false
		}
		i = skipWS(b, j)
		if i >= len(b) || b[i] != ':' {
			return op, false
		}
		i = skipWS(b, i+1)
		var bit int
		switch string(key) {
		case "index", "time", "process", "lease_ms":
			n, j, ok := fastInt(b, i)
			if !ok {
				return op, false
			}
			i = j
			switch string(key) {
			case "index":
				op.Index, bit = n, seenIndex
			case "time":
				op.Time, bit = n, seenTime
			case "process":
				if n != int64(int(n)) {
					return op, false
				}
				op.Process, bit = int(n), seenProcess
			default:
				op.LeaseMS, bit = n, seenLease
			}
		case "type", "f", "lock", "key", "node", "error":
			s, j, ok := fastString(b, i)
			if !ok {
				return op, false
			}
			i = j
			switch string(key) {
			case "type":
				op.Type, bit = Type(in.get(s)), seenType
			case "f":
				op.F, bit = in.get(s), seenF
			case "lock":
				op.Lock, bit = in.get(s), seenLock
			case "key":
				op.Key, bit = in.get(s), seenKey
			case "node":
				op.Node, bit = in.get(s), seenNode
			default:
				op.Error, bit = string(s), seenError
			}
		case "value":
			j, ok := skipValue(b, i)
			if !ok || j == i {
				return op, false
			}
			raw := b[i:j]
			if !json.Valid(raw) || !utf8.Valid(raw) {
				// encoding/json would accept bytes that are not UTF-8
				// and escaped lone surrogates, decoding both to U+FFFD:
				// the slow path rejects them (parseSlow).
				return op, false
			}
			if bytes.IndexByte(raw, '\\') >= 0 {
				if _, lone := loneSurrogate(raw); lone {
					return op, false
				}
			}
			if string(raw) != "null" {
				op.Value = append(json.RawMessage(nil), raw...)
			}
			i, bit = j, seenValue
		default:
			return op, false
		}
		if seen&bit != 0 {
			return op, false
		}
		seen |= bit
		i = skipWS(b, i)
		if i >= len(b) {
			return op, false
		}
		if b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if b[i] != '}' {
			return op, false
		}
		i = skipWS(b, i+1)
		if i != len(b) || seen&seenRequired != seenRequired || op.F == "" {
			return op, false
		}
		return op, true
	}
}

// parseSlow parses one line of a history with encoding/json, which also
// gives the error of a line that is no op. A history is JSON text,
// so UTF-8: a line with bytes that are not UTF-8, or with a string escape
// that stands for no character (half of a UTF-16 surrogate pair), is bad
// input. encoding/json would decode both to U+FFFD, making two different
// lock names, owners or elements one.
//
// Callers try parseFast first (the lines it accepts are UTF-8: it leaves
// anything else to this), then parseSlow.
func parseSlow(raw []byte) (Op, error) {
	op, err := parseOp(raw)
	if err != nil {
		return op, err
	}
	if !utf8.Valid(raw) {
		off := 0
		for off < len(raw) {
			r, n := utf8.DecodeRune(raw[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return Op{}, fmt.Errorf("not valid UTF-8 (byte 0x%02x at byte %d of the line): a history is JSON text, and lock names, owners and elements compare exactly", raw[off], off+1)
	}
	if off, ok := loneSurrogate(raw); ok {
		return Op{}, fmt.Errorf("the string escape at byte %d (%s) is half of a UTF-16 surrogate pair, no character: a history is JSON text, and lock names, owners and elements compare exactly", off+1, raw[off:off+6])
	}
	return op, nil
}

// loneSurrogate finds a \uXXXX escape in a JSON text that is a surrogate
// without its pair (a high one not followed by a low one, or a low one
// alone): the offset of its backslash.
func loneSurrogate(b []byte) (int, bool) {
	hex := func(i int) (rune, bool) {
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		var r rune
		for _, c := range b[i+2 : i+6] {
			switch {
			case c >= '0' && c <= '9':
				r = r<<4 | rune(c-'0')
			case c >= 'a' && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case c >= 'A' && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	in := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			in = !in
		case c == '\\' && in:
			r, ok := hex(i)
			if !ok {
				i++ // an escape of one character: skip it
				continue
			}
			switch {
			case r >= 0xd800 && r < 0xdc00:
				lo, ok := hex(i + 6)
				if !ok || lo < 0xdc00 || lo >= 0xe000 {
					return i, true
				}
				i += 11
			case r >= 0xdc00 && r < 0xe000:
				return i, true
			default:
				i += 5
			}
		}
	}
	return 0, false
}
