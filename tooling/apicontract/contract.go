package apicontract

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/pixbank/pix/api/openapi"
	"github.com/pixbank/pix/tooling/oas"
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
	Name   string
	Source []byte
	Model  *oas.Document
	auth   oas.Authenticate
}

// Load parses and indexes every document of api/openapi. A document that
// is not OpenAPI 3.1 or holds a $ref that resolves to nothing is an error.
func Load(opts Options) (*Contract, error) {
	c := &Contract{}
	for _, name := range openapi.Names {
		d, err := NewDocument(name, openapi.YAML(name), opts)
		if err != nil {
			return nil, err
		}
		c.Documents = append(c.Documents, d)
	}
	return c, nil
}

// NewDocument parses the OpenAPI document name from source, to check
// exchanges as opts say. A document that is not OpenAPI 3.1 or holds a
// $ref that resolves to nothing is an error; the errors start with name.
func NewDocument(name string, source []byte, opts Options) (*Document, error) {
	model, err := oas.Parse(name, source)
	if err != nil {
		return nil, err
	}
	return &Document{Name: name, Source: source, Model: model, auth: authenticate(opts)}, nil
}

// Validate checks the document against the OpenAPI 3.1 specification's
// own schema.
func (d *Document) Validate() error {
	if err := d.Model.Validate(); err != nil {
		return fmt.Errorf("%s is not a valid OpenAPI document: %w", d.Name, err)
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
		req := ex.request()
		route := d.Model.FindRoute(ex.Method, req.URL.EscapedPath())
		if route == nil || route.Operation == nil {
			continue
		}
		res := Result{Document: d.Name, Operation: ex.Method + " " + route.Path.Path}
		if errs := d.Model.ValidateResponse(route, ex.Status, ex.ResponseHeader, ex.ResponseBody); len(errs) > 0 {
			res.Problems = append(res.Problems, "the answer is not what the document says: "+Describe(errs))
		}
		if errs := d.Model.ValidateRequest(route, req, ex.RequestBody, d.auth); len(errs) > 0 && ex.Status < 400 {
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

// Describe renders validation errors on one line each, sorted: what
// departs and, for a value, where in it (a JSON pointer), why, and the
// schema keyword that refused it.
func Describe(errs []*oas.Error) string {
	parts := make([]string, 0, len(errs))
	for _, e := range errs {
		parts = append(parts, e.Error())
	}
	slices.Sort(parts)
	return strings.Join(slices.Compact(parts), " | ")
}

// authenticate says whether a request meets one security scheme, by what
// the document says of it: an apiKey header present; for a bearer JWT,
// the scopes the operation lists in its scope claim (the token is read,
// not verified: whether the service accepts it is the service's test);
// for the admin token, the token itself.
func authenticate(opts Options) oas.Authenticate {
	return func(r *http.Request, scheme *oas.SecurityScheme, scopes []string) error {
		switch strings.ToLower(scheme.Type) {
		case "apikey":
			if scheme.In != "header" || r.Header.Get(scheme.ParamName) == "" {
				return fmt.Errorf("no %s header", scheme.ParamName)
			}
			return nil
		case "http":
			token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
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
			for _, want := range scopes {
				if !slices.Contains(granted, want) {
					return fmt.Errorf("the token does not grant %s", want)
				}
			}
			return nil
		case "mutualtls":
			if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
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
