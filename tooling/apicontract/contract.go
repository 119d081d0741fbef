package apicontract

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	vErrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/router"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/pixbank/pix/api/openapi"
)

// Exchange is one request to the service and the answer it got.
type Exchange struct {
	Method string
	// Target is the request's path and query, as sent.
	Target         string
	RequestHeader  http.Header
	RequestBody    []byte
	Status         int
	ResponseHeader http.Header
	ResponseBody   []byte
	// ClientCertificate: the request came over TLS with a client
	// certificate the server verified (the mutualTLS scheme).
	ClientCertificate bool
}

func (ex Exchange) String() string {
	return fmt.Sprintf("%s %s → %d", ex.Method, ex.Target, ex.Status)
}

// Options tune the checks.
type Options struct {
	// AdminToken is the service's ADMIN_TOKEN: the adminToken scheme is
	// met by it alone ("": by any bearer token).
	AdminToken string
}

// Contract is the service's OpenAPI documents, ready to check exchanges.
type Contract struct {
	Documents []*Document
}

// Document is one OpenAPI document of api/openapi.
type Document struct {
	Name      string
	Source    []byte
	Model     *v3.Document
	doc       libopenapi.Document
	validator validator.Validator
	router    router.Router
}

// Load parses and indexes every document of api/openapi. A document that
// is not OpenAPI 3.1 or holds a $ref that resolves to nothing is an error.
func Load(opts Options) (*Contract, error) {
	c := &Contract{}
	for _, name := range openapi.Names {
		d, err := loadDocument(name, openapi.YAML(name), opts)
		if err != nil {
			return nil, err
		}
		c.Documents = append(c.Documents, d)
	}
	return c, nil
}

func loadDocument(name string, source []byte, opts Options) (*Document, error) {
	doc, model, err := Parse(name, source)
	if err != nil {
		return nil, err
	}
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions(), config.WithAuthenticationFunc(authenticate(opts)))
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", name, errors.Join(errs...))
	}
	return &Document{Name: name, Source: source, Model: model, doc: doc, validator: v,
		router: router.NewRouter(model, router.WithPathOnlyMatching())}, nil
}

// Parse parses and indexes the OpenAPI document name from source, and
// builds its model. A document that is not OpenAPI 3.1 or holds a $ref
// that resolves to nothing is an error; the errors start with name.
func Parse(name string, source []byte) (libopenapi.Document, *v3.Document, error) {
	doc, err := libopenapi.NewDocument(source)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	if v := doc.GetVersion(); !strings.HasPrefix(v, "3.1.") {
		return nil, nil, fmt.Errorf("%s: openapi %q, want 3.1.x", name, v)
	}
	built, err := doc.BuildV3Model()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	var unresolved []error
	unresolved = append(unresolved, built.Index.GetReferenceIndexErrors()...)
	for _, e := range built.Index.GetResolver().GetResolvingErrors() {
		unresolved = append(unresolved, e)
	}
	if len(unresolved) > 0 {
		return nil, nil, fmt.Errorf("%s: references that resolve to nothing: %w", name, errors.Join(unresolved...))
	}
	return doc, &built.Model, nil
}

// Validate checks the document against the OpenAPI 3.1 specification's
// own schema.
func (d *Document) Validate() error {
	if ok, errs := d.validator.ValidateDocument(); !ok {
		return fmt.Errorf("%s is not a valid OpenAPI document: %s", d.Name, Describe(errs))
	}
	return nil
}

// Result is what Check found of one exchange.
type Result struct {
	// Document and Operation ("POST /pix", the path as documented) name
	// the documented operation; empty when the route is not documented.
	Document  string
	Operation string
	// Problems are how the exchange departs from the document; none: it
	// keeps to it.
	Problems []string
}

// Check checks one exchange: the route and method must be documented, the
// answer must be documented for the operation (status, headers, body), and
// a request the document refuses must not have been answered with success.
// A route or method no document has may only be answered as the documents
// say the router answers it: 404 not_found, 405 method_not_allowed.
func (c *Contract) Check(ex Exchange) Result {
	for _, d := range c.Documents {
		route, err := d.router.FindRoute(ex.request())
		if err != nil || route.Operation == nil {
			continue
		}
		res := Result{Document: d.Name, Operation: ex.Method + " " + route.Path}
		if ok, errs := d.validator.ValidateHttpResponse(ex.request(), ex.response()); !ok {
			res.Problems = append(res.Problems, "the answer is not what the document says: "+Describe(errs))
		}
		if ok, errs := d.validator.ValidateHttpRequestSync(ex.request()); !ok && ex.Status < 400 {
			res.Problems = append(res.Problems, fmt.Sprintf("the document refuses the request (%s), but the service answered %d",
				Describe(errs), ex.Status))
		}
		return res
	}
	if refusedRoute(ex) {
		return Result{}
	}
	return Result{Problems: []string{fmt.Sprintf("no document has the route %s %s", ex.Method, pathOf(ex.Target))}}
}

// refusedRoute reports whether ex is the answer to a route or method no
// document has: the envelope with not_found (404) or method_not_allowed
// (405). Which routes are served at all is the route test's to check
// (gin's routes against the documents'), not the traffic's.
func refusedRoute(ex Exchange) bool {
	var body struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(ex.ResponseBody, &body) != nil {
		return false
	}
	return (ex.Status == http.StatusNotFound && body.Error.Code == "not_found") ||
		(ex.Status == http.StatusMethodNotAllowed && body.Error.Code == "method_not_allowed")
}

func pathOf(target string) string {
	path, _, _ := strings.Cut(target, "?")
	return path
}

func (ex Exchange) request() *http.Request {
	r, err := http.NewRequest(ex.Method, "http://service"+ex.Target, bytes.NewReader(ex.RequestBody))
	if err != nil {
		// The target came from a request the server parsed.
		panic(fmt.Sprintf("apicontract: %s: %v", ex, err))
	}
	r.Header = ex.RequestHeader.Clone()
	if r.Header == nil {
		r.Header = http.Header{}
	}
	if ex.ClientCertificate {
		// What the scheme asks is that the server verified one; which
		// certificate is the service's test.
		r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{}}}}
	}
	return r
}

func (ex Exchange) response() *http.Response {
	return &http.Response{
		StatusCode: ex.Status, Status: strconv.Itoa(ex.Status) + " " + http.StatusText(ex.Status),
		Header: ex.ResponseHeader.Clone(), Body: readCloser{bytes.NewReader(ex.ResponseBody)},
		ContentLength: int64(len(ex.ResponseBody)),
	}
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// Describe renders validation errors on one line each, most specific
// first: the failing fields and why.
func Describe(errs []*vErrors.ValidationError) string {
	var parts []string
	for _, e := range errs {
		s := e.Message
		if e.Reason != "" && e.Reason != e.Message {
			s += ": " + e.Reason
		}
		for _, f := range e.SchemaValidationErrors {
			where := f.FieldPath
			if where == "" {
				where = f.KeywordLocation
			}
			s += fmt.Sprintf("; %s %s", where, f.Reason)
		}
		parts = append(parts, s)
	}
	slices.Sort(parts)
	return strings.Join(slices.Compact(parts), " | ")
}

// authenticate says whether a request meets one security scheme, by what
// the document says of it: an apiKey header present; for a bearer JWT,
// the scopes the operation lists in its scope claim (the token is read,
// not verified: whether the service accepts it is the service's test);
// for the admin token, the token itself.
func authenticate(opts Options) config.AuthenticationFunc {
	return func(_ context.Context, in *config.AuthenticationInput) error {
		scheme := in.SecurityScheme
		switch strings.ToLower(scheme.Type) {
		case "apikey":
			if scheme.In != "header" || in.Request.Header.Get(scheme.Name) == "" {
				return fmt.Errorf("no %s header", scheme.Name)
			}
			return nil
		case "http":
			token, ok := strings.CutPrefix(in.Request.Header.Get("Authorization"), "Bearer ")
			if !strings.EqualFold(scheme.Scheme, "bearer") || !ok || strings.TrimSpace(token) == "" {
				return errors.New("no bearer token")
			}
			if scheme.BearerFormat != "JWT" {
				if opts.AdminToken != "" && token != opts.AdminToken {
					return errors.New("not the admin token")
				}
				return nil
			}
			granted, err := jwtScopes(token)
			if err != nil {
				return err
			}
			for _, want := range in.Scopes {
				if !slices.Contains(granted, want) {
					return fmt.Errorf("the token does not grant %s", want)
				}
			}
			return nil
		case "mutualtls":
			if in.Request.TLS == nil || len(in.Request.TLS.VerifiedChains) == 0 {
				return errors.New("no verified client certificate")
			}
			return nil
		}
		return fmt.Errorf("scheme type %s is not checked", scheme.Type)
	}
}

// jwtScopes are the scopes of a JWT's scope claim (space-separated).
func jwtScopes(token string) ([]string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errors.New("not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, fmt.Errorf("JWT payload: %w", err)
	}
	var claims struct {
		Scope string `json:"scope"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return nil, fmt.Errorf("JWT claims: %w", err)
	}
	return strings.Fields(claims.Scope), nil
}

// CheckAll checks every exchange; results are each one's, in order, and
// reports the departures, one line per operation, status and problem, with
// how many times it was seen and the first exchange that showed it.
func (c *Contract) CheckAll(exchanges []Exchange) (results []Result, reports []string) {
	type seen struct {
		example Exchange
		times   int
	}
	found := map[string]*seen{}
	var order []string
	for _, ex := range exchanges {
		res := c.Check(ex)
		results = append(results, res)
		for _, problem := range res.Problems {
			key := fmt.Sprintf("%s (%d): %s", res.Operation, ex.Status, problem)
			if found[key] == nil {
				found[key] = &seen{example: ex}
				order = append(order, key)
			}
			found[key].times++
		}
	}
	for _, key := range order {
		f := found[key]
		reports = append(reports, fmt.Sprintf("%s (%d times)\n  e.g. %s\n  request:  %s\n  response: %s",
			key, f.times, f.example, snippet(f.example.RequestBody), snippet(f.example.ResponseBody)))
	}
	return results, reports
}

func snippet(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "..."
	}
	return string(b)
}
