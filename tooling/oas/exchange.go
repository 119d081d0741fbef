package oas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Authenticate says whether r meets the security scheme, asked with
// scopes (the requirement's): nil, it does; otherwise why not.
type Authenticate func(r *http.Request, scheme *SecurityScheme, scopes []string) error

// ValidateRequest checks r, whose body is body (r.Body is not read),
// against its route's operation: its path, query and header parameters,
// its body and, unless auth is nil, its security. None: it keeps to the
// document.
func (d *Document) ValidateRequest(rt *Route, r *http.Request, body []byte, auth Authenticate) []*Error {
	op := rt.Operation
	var errs []*Error
	if auth != nil {
		if err := d.checkSecurity(op, r, auth); err != nil {
			errs = append(errs, err)
		}
	}
	query := r.URL.Query()
	for _, p := range op.Parameters {
		var raw []string
		switch p.In {
		case "path":
			if v, ok := rt.Params[p.Name]; ok {
				raw = []string{v}
			}
		case "query":
			raw = query[p.Name]
		case "header":
			raw = r.Header.Values(p.Name)
		case "cookie":
			if c, err := r.Cookie(p.Name); err == nil {
				raw = []string{c.Value}
			}
		}
		what := fmt.Sprintf("%s parameter '%s'", p.In, p.Name)
		if len(raw) == 0 {
			if p.Required {
				errs = append(errs, &Error{Message: what + " is required, and missing"})
			}
			continue
		}
		if p.Schema == nil {
			continue
		}
		v := d.coerce(p.Schema.Value, raw, p.In == "query" && p.Explode)
		if err := d.ValidateValue(p.Schema, v, what); err != nil {
			errs = append(errs, err.(*Error)) //nolint:forcetypeassert // ValidateValue's errors are *Error
		}
	}
	if op.RequestBody != nil {
		errs = append(errs, d.checkBody("request body", op.RequestBody.Content, op.RequestBody.Required, r.Header, body)...)
	}
	return errs
}

// checkSecurity: one of the operation's requirements (or the document's,
// when it names none) is met, each of its schemes by auth.
func (d *Document) checkSecurity(op *Operation, r *http.Request, auth Authenticate) *Error {
	reqs := op.Security
	if reqs == nil {
		reqs = d.Security
	}
	if len(reqs) == 0 {
		return nil
	}
	var why []string
	for _, req := range reqs {
		met := true
		for _, s := range req {
			scheme := d.SecuritySchemes[s.Scheme]
			if scheme == nil {
				met = false
				why = append(why, fmt.Sprintf("%s: no such security scheme", s.Scheme))
				continue
			}
			if err := auth(r, scheme, s.Scopes); err != nil {
				met = false
				why = append(why, fmt.Sprintf("%s: %v", s.Scheme, err))
			}
		}
		if met {
			return nil
		}
	}
	return &Error{Message: "security: no requirement of the operation is met", Fields: why}
}

// ValidateResponse checks an answer (status, header, body) to a request
// of method routed to rt: a documented status (the code, then its range
// 4XX, then default), its required headers present and keeping to their
// schemas, its body of a documented media type keeping to its schema.
// None: it keeps to the document.
func (d *Document) ValidateResponse(rt *Route, status int, header http.Header, body []byte) []*Error {
	op := rt.Operation
	res := findResponse(op.Responses, status)
	if res == nil {
		var documented []string
		for _, r := range op.Responses {
			documented = append(documented, r.Status)
		}
		return []*Error{{Message: fmt.Sprintf("status %d is not documented for %s %s (documented: %s)",
			status, op.Method, op.Path, strings.Join(documented, ", "))}}
	}
	var errs []*Error
	for _, h := range res.Headers {
		if strings.EqualFold(h.Name, "Content-Type") {
			continue // OpenAPI: described by the content, not by a header
		}
		what := fmt.Sprintf("response header '%s'", h.Name)
		raw := header.Values(h.Name)
		if len(raw) == 0 {
			if h.Required {
				errs = append(errs, &Error{Message: fmt.Sprintf("%s is required for %d, and missing", what, status)})
			}
			continue
		}
		if h.Schema != nil {
			if err := d.ValidateValue(h.Schema, d.coerce(h.Schema.Value, raw, false), what); err != nil {
				errs = append(errs, err.(*Error)) //nolint:forcetypeassert // ValidateValue's errors are *Error
			}
		}
	}
	if len(res.Content) > 0 {
		errs = append(errs, d.checkBody(fmt.Sprintf("response body (%d)", status), res.Content, true, header, body)...)
	}
	return errs
}

func findResponse(responses []*Response, status int) *Response {
	code := strconv.Itoa(status)
	for _, want := range []string{code, code[:1] + "XX", "default"} {
		for _, r := range responses {
			if strings.EqualFold(r.Status, want) {
				return r
			}
		}
	}
	return nil
}

// checkBody checks a body against content: of a documented media type
// (Content-Type's, its parameters ignored), and, for JSON, keeping to
// the media type's schema. A body of another media type is not read.
func (d *Document) checkBody(what string, content []*MediaType, required bool, header http.Header, body []byte) []*Error {
	if len(body) == 0 && !required {
		return nil
	}
	contentType := header.Get("Content-Type")
	mt := findMediaType(content, contentType)
	if mt == nil {
		var documented []string
		for _, m := range content {
			documented = append(documented, m.Type)
		}
		return []*Error{{Message: fmt.Sprintf("%s: Content-Type %q is not documented (documented: %s)",
			what, contentType, strings.Join(documented, ", "))}}
	}
	if mt.Schema == nil || !isJSON(mt.Type, contentType) {
		return nil
	}
	if len(body) == 0 {
		return []*Error{{Message: what + " is empty; the document says " + mt.Type}}
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return []*Error{{Message: fmt.Sprintf("%s is not JSON: %v", what, err)}}
	}
	if err := d.ValidateValue(mt.Schema, v, what); err != nil {
		return []*Error{err.(*Error)} //nolint:forcetypeassert // ValidateValue's errors are *Error
	}
	return nil
}

func isJSON(documented, contentType string) bool {
	for _, t := range []string{documented, contentType} {
		t, _, _ = strings.Cut(strings.ToLower(t), ";")
		t = strings.TrimSpace(t)
		if t == "application/json" || strings.HasSuffix(t, "+json") {
			return true
		}
	}
	return false
}

// findMediaType is the media type of content that contentType is: the
// same type, then the ranges type/*+suffix, type/*, */subtype, */*.
func findMediaType(content []*MediaType, contentType string) *MediaType {
	if contentType == "" {
		return nil
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mediaType, _, _ = strings.Cut(strings.ToLower(contentType), ";")
		mediaType = strings.TrimSpace(mediaType)
	}
	typ, subtype, _ := strings.Cut(mediaType, "/")
	suffix := ""
	if plus := strings.LastIndexByte(subtype, '+'); plus >= 0 {
		suffix = subtype[plus:]
	}
	for _, want := range []string{mediaType, typ + "/*" + suffix, typ + "/*", "*/" + subtype, "*/*"} {
		for _, m := range content {
			if strings.EqualFold(m.Type, want) {
				return m
			}
		}
	}
	return nil
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// coerce is the JSON value of a parameter's or header's raw values, by
// the types its schema allows: numbers and booleans parsed, arrays split
// (exploded: one value a time; otherwise comma-separated).
func (d *Document) coerce(schema any, raw []string, exploded bool) any {
	types := d.types(schema)
	if slices.Contains(types, "array") {
		values := raw
		if !exploded {
			values = strings.Split(raw[0], ",")
		}
		var itemSchema any
		if m, _ := d.deref(schema, ""); m != nil {
			itemSchema = m["items"]
		}
		items := make([]any, 0, len(values))
		for _, v := range values {
			items = append(items, d.coerce(itemSchema, []string{v}, false))
		}
		return items
	}
	s := raw[0]
	if slices.Contains(types, "integer") || slices.Contains(types, "number") {
		if jsonNumber.MatchString(s) {
			return json.Number(s)
		}
	}
	if slices.Contains(types, "boolean") {
		if b, err := strconv.ParseBool(s); err == nil {
			return b
		}
	}
	return s
}

// types are the JSON types a schema names (type), through $ref and allOf.
func (d *Document) types(schema any) []string {
	m, _ := d.deref(schema, "")
	if m == nil {
		return nil
	}
	switch t := m["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	for _, sub := range asSlice(m["allOf"]) {
		if t := d.types(sub); len(t) > 0 {
			return t
		}
	}
	return nil
}
