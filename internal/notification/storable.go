package notification

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Storable returns a JSON value the decoders accepted (a notification's
// payload or refund notice) as PostgreSQL's jsonb can store it. What the
// parsers accept and jsonb refuses is informational by then (every money
// field was read and checked already), and must never decide whether a
// PIX is stored:
//   - a byte that is not UTF-8 (a Latin-1 é) in a string becomes U+FFFD;
//   - a \u escape of a UTF-16 surrogate that is not half of a pair (an
//     emoji cut in half) becomes \ufffd;
//   - the NUL character (\u0000), which jsonb's text can't hold, becomes
//     \ufffd;
//   - a number numeric might not hold becomes the string of its text:
//     kept as a number only when its text is at most maxStorableNumberLen
//     bytes and its exponent at most maxStorableExponent in magnitude (far
//     inside numeric's range whatever the PostgreSQL version).
//
// encoding/json reads the invalid bytes and the lone surrogates as U+FFFD
// too: a string reads the same in the copy as in what was sent, but for
// NUL. A value that needs none of it (every webhook we have seen) is
// returned as it is, without a copy.
func Storable(value []byte) []byte {
	var out []byte // nil until the first change
	copied := 0    // value[:copied] is in out
	replace := func(from, to int, with string) {
		if out == nil {
			out = make([]byte, 0, len(value)+16)
		}
		out = append(append(out, value[copied:from]...), with...)
		copied = to
	}
	for i := 0; i < len(value); {
		switch c := value[i]; {
		case c == '"':
			i = storableString(value, i, replace)
		case c == '-' || '0' <= c && c <= '9':
			end, ok := scanNumber(value, i)
			if !ok {
				return value // not a value the decoders accepted: nothing to make of it
			}
			if !storableNumber(value[i:end]) {
				replace(i, end, `"`+string(value[i:end])+`"`)
			}
			i = end
		default:
			i++
		}
	}
	if out == nil {
		return value
	}
	return append(out, value[copied:]...)
}

// The numbers Storable keeps as numbers: numeric holds up to 131072 digits
// before the point and 16383 after it (PostgreSQL 14 and before refused an
// exponent beyond 1000 in magnitude on input).
const (
	maxStorableNumberLen = 1000
	maxStorableExponent  = 1000
)

// storableNumber reports whether the JSON number num (checked by
// scanNumber) is kept as a number: one that numeric holds and that a
// float64 holds too, since what reads the payload back (the credit's memo,
// decoded by encoding/json into any) would fail on 1e400, and with it every
// row claimed beside it.
func storableNumber(num []byte) bool {
	if len(num) > maxStorableNumberLen {
		return false
	}
	if _, err := strconv.ParseFloat(string(num), 64); err != nil {
		return false
	}
	for i, c := range num {
		if c != 'e' && c != 'E' {
			continue
		}
		digits := num[i+1:]
		if len(digits) > 0 && (digits[0] == '+' || digits[0] == '-') {
			digits = digits[1:]
		}
		exp := 0
		for _, d := range digits {
			exp = exp*10 + int(d-'0')
			if exp > maxStorableExponent {
				return false
			}
		}
	}
	return true
}

// storableString passes over the JSON string at value[i] (a '"'), calling
// replace for what jsonb can't hold, and returns the index after its
// closing quote.
func storableString(value []byte, i int, replace func(from, to int, with string)) int {
	for i++; i < len(value); {
		c := value[i]
		switch {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 < len(value) && value[i+1] == 'u' {
				r, ok := hex4(value, i+2)
				switch {
				case !ok:
					i += 2
				case r == 0:
					replace(i, i+6, `\ufffd`)
					i += 6
				case utf16.IsSurrogate(r):
					if low, ok := lowSurrogateAt(value, i+6); ok && utf16.DecodeRune(r, low) != utf8.RuneError {
						i += 12 // a pair: one character
						continue
					}
					replace(i, i+6, `\ufffd`)
					i += 6
				default:
					i += 6
				}
				continue
			}
			i += 2
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(value[i:])
			if r == utf8.RuneError && size == 1 {
				replace(i, i+1, "\uFFFD")
			}
			i += size
		default:
			i++
		}
	}
	return i
}

// lowSurrogateAt reads a \u escape at value[i], if there is one.
func lowSurrogateAt(value []byte, i int) (rune, bool) {
	if i+1 >= len(value) || value[i] != '\\' || value[i+1] != 'u' {
		return 0, false
	}
	return hex4(value, i+2)
}
