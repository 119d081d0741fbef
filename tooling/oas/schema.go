package oas

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Error is one way a request, an answer or a value departs from the
// document: what departs (Message) and, for a value its schema refuses,
// where in the value and why (Fields: "/pix/0/endToEndId: length must be
// <= 32 (at #/properties/endToEndId/maxLength)").
type Error struct {
	Message string
	Fields  []string
}

func (e *Error) Error() string {
	if len(e.Fields) == 0 {
		return e.Message
	}
	return e.Message + ": " + strings.Join(e.Fields, "; ")
}

// compile is the compiled schema at ptr (a JSON pointer into the
// document). Compiled schemas are kept: compiling is the dear part, and
// the compiler is not safe for concurrent use, a compiled schema is.
func (d *Document) compile(ptr string) (*jsonschema.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.compiled[ptr]; ok {
		return s, nil
	}
	s, err := d.compiler.Compile(d.url + "#" + encodePointer(ptr))
	if err != nil {
		return nil, fmt.Errorf("%s: schema at %s: %w", d.Name, ptr, err)
	}
	d.compiled[ptr] = s
	return s, nil
}

// encodePointer is a JSON pointer as a URL fragment.
func encodePointer(ptr string) string {
	toks := strings.Split(ptr, "/")
	for i, t := range toks {
		toks[i] = url.PathEscape(t)
	}
	return strings.Join(toks, "/")
}

// ValidateValue checks v (a JSON value: jsonschema.UnmarshalJSON's, or
// Parse's) against the schema s of the document. what names the value in
// the error (a *Error).
func (d *Document) ValidateValue(s *Schema, v any, what string) error {
	compiled, err := d.compile(s.Pointer)
	if err != nil {
		return &Error{Message: what + ": " + err.Error()}
	}
	return schemaError(compiled.Validate(v), what)
}

// schemaError is the *Error of a validation's error err (nil: nil).
func schemaError(err error, what string) error {
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &Error{Message: what + ": " + err.Error()}
	}
	return &Error{Message: what + " does not keep to its schema", Fields: fields(ve)}
}

// fields are the leaves of a validation error, each where in the value
// (a JSON pointer) and why, with the schema keyword that refused it (its
// place in the document).
func fields(ve *jsonschema.ValidationError) []string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		where := "/"
		if len(e.InstanceLocation) > 0 {
			toks := make([]string, len(e.InstanceLocation))
			for i, t := range e.InstanceLocation {
				toks[i] = escapeToken(t)
			}
			where = "/" + strings.Join(toks, "/")
		}
		keyword := e.SchemaURL
		if _, frag, ok := strings.Cut(keyword, "#"); ok {
			keyword = "#" + frag
		}
		for _, k := range e.ErrorKind.KeywordPath() {
			keyword += "/" + escapeToken(k)
		}
		out = append(out, fmt.Sprintf("%s: %s (at %s)", where, e.ErrorKind.LocalizedString(english), keyword))
	}
	walk(ve)
	slices.Sort(out)
	return slices.Compact(out)
}

var english = message.NewPrinter(language.English)
