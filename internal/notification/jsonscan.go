package notification

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// The fast path of the webhook decoders: one pass over the body that checks
// what CheckJSON checks (one JSON value, no key twice in an object, nesting
// at most maxJSONDepth) and finds the members the decoders read, without a
// token, a map or a copy per member. It only ever
// says "accepted, and here is what was sent" or "not sure": anything it
// does not take for certain (an error of any kind, an escaped or non-ASCII
// key, a NUL escape, an object of more than fastMaxMembers members, space
// after the value other than JSON's) goes to the slow path, CheckJSON and
// DecodeObject, which decides and says why with the same words as always.
// FuzzFastDecodersMatchTheOracle holds both paths to the decoders as they
// were before the fast path (oracle_test.go).

// fastMaxMembers is the most members an object may have on the fast path:
// its keys are compared with each other, and kept on the stack.
const fastMaxMembers = 16

// jsonMember is one member of an object: its key as sent (no escapes, so
// as decoded too) and its value's bytes.
type jsonMember struct {
	key, value []byte
}

// jsonMembers are the members of one object, in order.
type jsonMembers struct {
	m [fastMaxMembers]jsonMember
	n int
}

// get is the value of the member named key; nil when there is none.
func (ms *jsonMembers) get(key string) []byte {
	for i := range ms.n {
		if string(ms.m[i].key) == key {
			return ms.m[i].value
		}
	}
	return nil
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanValue checks the JSON value at data[i] (a container is at depth+1)
// and returns the index just after it; ok is false when the fast path
// cannot tell.
func scanValue(data []byte, i, depth int) (end int, ok bool) {
	if i >= len(data) {
		return 0, false
	}
	switch c := data[i]; {
	case c == '{':
		return scanObject(data, i, depth+1, nil)
	case c == '[':
		return scanArray(data, i, depth+1)
	case c == '"':
		end, _, ok := scanString(data, i)
		return end, ok
	case c == 't':
		return scanLiteral(data, i, "true")
	case c == 'f':
		return scanLiteral(data, i, "false")
	case c == 'n':
		return scanLiteral(data, i, "null")
	case c == '-' || '0' <= c && c <= '9':
		return scanNumber(data, i)
	}
	return 0, false
}

func scanLiteral(data []byte, i int, lit string) (int, bool) {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// scanNumber checks JSON's number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
// What follows it is the caller's to check (a delimiter).
func scanNumber(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		i = skipDigits(data, i+1)
	default:
		return 0, false
	}
	if i < len(data) && data[i] == '.' {
		j := skipDigits(data, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := skipDigits(data, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func skipDigits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}

// scanString checks the string at data[i] (a '"') and returns the index
// just after its closing quote. plain says that it holds neither an escape
// nor a byte outside ASCII: its bytes are then its decoded text. A \u0000
// escape (the NUL character, rare, in a money field refused by the field's
// own rules) is not ok: the slow path decides it.
func scanString(data []byte, i int) (end int, plain, ok bool) {
	plain = true
	for i++; i < len(data); {
		c := data[i]
		if !stringSpecial[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			return i + 1, plain, true
		case c < 0x20:
			return 0, false, false
		case c == '\\':
			plain = false
			if i+1 >= len(data) {
				return 0, false, false
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if r, ok := hex4(data, i+2); !ok || r == 0 {
					return 0, false, false
				}
				i += 6
			default:
				return 0, false, false
			}
		case c >= utf8.RuneSelf:
			// Taken as it is, as encoding/json takes it (invalid UTF-8
			// decodes to U+FFFD).
			plain = false
			i++
		default:
			i++
		}
	}
	return 0, false, false
}

// hex4 reads the four hexadecimal digits of a \u escape at value[i].
func hex4(value []byte, i int) (rune, bool) {
	if len(value)-i < 4 {
		return 0, false
	}
	var r rune
	for _, h := range value[i : i+4] {
		switch {
		case '0' <= h && h <= '9':
			r = r<<4 | rune(h-'0')
		case 'a' <= h && h <= 'f':
			r = r<<4 | rune(h-'a'+10)
		case 'A' <= h && h <= 'F':
			r = r<<4 | rune(h-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// stringSpecial marks the bytes scanString must look at: the quote, the
// backslash, the control characters and the bytes outside ASCII.
var stringSpecial = func() (t [256]bool) {
	for c := range t {
		t[c] = c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf
	}
	return t
}()

// scanArray checks the array at data[i] (a '[') at depth.
func scanArray(data []byte, i, depth int) (int, bool) {
	if depth > maxJSONDepth {
		return 0, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = scanValue(data, i, depth); !ok {
			return 0, false
		}
		var end bool
		if i, end, ok = afterElement(data, i, ']'); !ok || end {
			return i, ok
		}
	}
}

// afterElement reads what follows an element of an array or object at
// data[i]: a ',' (the next element starts at next) or closer (the
// container ends just before next); anything else is no JSON.
func afterElement(data []byte, i int, closer byte) (next int, end, ok bool) {
	i = skipSpace(data, i)
	if i >= len(data) {
		return 0, false, false
	}
	switch data[i] {
	case ',':
		return skipSpace(data, i+1), false, true
	case closer:
		return i + 1, true, true
	}
	return 0, false, false
}

// scanObject checks the object at data[i] (a '{') at depth, and puts its
// members in out when out is not nil.
func scanObject(data []byte, i, depth int, out *jsonMembers) (int, bool) {
	if depth > maxJSONDepth {
		return 0, false
	}
	var own jsonMembers // the keys seen, to find one sent twice
	ms := out
	if ms == nil {
		ms = &own
	}
	ms.n = 0
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(data) || data[i] != '"' || ms.n == fastMaxMembers {
			return 0, false
		}
		keyEnd, plain, ok := scanString(data, i)
		if !ok || !plain {
			// An escaped key could be another's twin once decoded.
			return 0, false
		}
		key := data[i+1 : keyEnd-1]
		for _, m := range ms.m[:ms.n] {
			if bytes.Equal(m.key, key) {
				return 0, false
			}
		}
		i = skipSpace(data, keyEnd)
		if i >= len(data) || data[i] != ':' {
			return 0, false
		}
		start := skipSpace(data, i+1)
		if i, ok = scanValue(data, start, depth); !ok {
			return 0, false
		}
		ms.m[ms.n] = jsonMember{key, data[start:i]}
		ms.n++
		var end bool
		if i, end, ok = afterElement(data, i, '}'); !ok || end {
			return i, ok
		}
	}
}

// scanBody checks that body is one JSON object and nothing but JSON
// whitespace around it, and puts its members in out.
func scanBody(body []byte, out *jsonMembers) bool {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	end, ok := scanObject(body, i, 1, out)
	return ok && skipSpace(body, end) == len(body)
}

// fastString is the text of a JSON string value (checked by the scan), as
// json.Unmarshal decodes it; ok is false when raw is not a string.
func fastString(raw []byte) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	text := raw[1 : len(raw)-1]
	if bytes.IndexByte(text, '\\') < 0 && utf8.Valid(text) {
		return string(text), true
	}
	// Escapes, or invalid UTF-8 (U+FFFD): encoding/json's own reading.
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// isNull reports whether raw, a member's value, is absent or null
// (Present's negation).
func isNull(raw []byte) bool {
	return len(raw) == 0 || string(raw) == "null"
}
