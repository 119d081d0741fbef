package notification

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/pixbank/pix/internal/pix"
)

// maxJSONDepth bounds the nesting of a webhook body; the formats we take need
// four levels, the rest is room for informational fields.
const maxJSONDepth = 32

// CheckJSON refuses, with the offending field's path, what encoding/json
// would let through silently and what we must not store:
//   - anything but exactly one JSON value;
//   - a key repeated in one object: parsers disagree on which copy wins, so
//     {"valor":"1.00","valor":"1000.00"} could mean two amounts to two readers;
//   - nesting deeper than maxJSONDepth.
//
// What PostgreSQL's jsonb can't hold as sent (the NUL character, a lone
// surrogate, a byte that is not UTF-8, a number beyond numeric) is no
// refusal: informational content never decides whether a PIX is stored,
// and the store keeps a copy it can hold (Storable). A money field holds
// none of it by its own rules (patterns, no control character, a time).
func CheckJSON(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct {
		object  bool
		keys    map[string]struct{}
		key     string // the current member's key (objects)
		index   int    // the current element's index (arrays)
		wantKey bool
	}
	var stack []*frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			if f.object {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			} else {
				b.WriteString("[" + strconv.Itoa(f.index) + "]")
			}
		}
		if b.Len() == 0 {
			return "body"
		}
		return b.String()
	}
	// value is called after each complete value (scalar or closed container)
	// to move its parent to the next member or element.
	value := func() {
		if len(stack) == 0 {
			return
		}
		top := stack[len(stack)-1]
		if top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if len(stack) > 0 {
				return pix.Invalid("body", "is not valid JSON: unexpected end")
			}
			return pix.Invalid("body", "must be a JSON value")
		}
		if err != nil {
			return pix.Invalid("body", "is not valid JSON: %v", err)
		}
		if len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].wantKey {
			top := stack[len(stack)-1]
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				value()
				if len(stack) == 0 {
					break
				}
				continue
			}
			key, _ := tok.(string) // the decoder only yields a string here
			top.key = key
			if _, dup := top.keys[key]; dup {
				return pix.Invalid(path(), "appears twice in the same object")
			}
			top.keys[key] = struct{}{}
			top.wantKey = false
			continue
		}
		if t, ok := tok.(json.Delim); ok {
			switch t {
			case '{', '[':
				if len(stack) == maxJSONDepth {
					return pix.Invalid(path(), "is nested deeper than %d levels", maxJSONDepth)
				}
				stack = append(stack, &frame{object: t == '{', keys: map[string]struct{}{}, wantKey: t == '{'})
				continue
			case ']':
				stack = stack[:len(stack)-1]
			}
		}
		value()
		if len(stack) == 0 {
			break
		}
	}
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return pix.Invalid("body", "must hold exactly one JSON value, with nothing after it")
	}
	return nil
}

// DecodeObject decodes one JSON object (checked by CheckJSON) into its
// members by exact key: encoding/json's struct decoding would also match
// "VALOR" or "Valor" to a field named valor.
func DecodeObject(raw json.RawMessage, field string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, pix.Invalid(field, "must be a JSON object")
	}
	return m, nil
}
