package pspspec

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pixbank/pix/tooling/apicontract"
	"github.com/pixbank/pix/tooling/oas"
)

// Document is api-pix.yaml.
//
//go:embed api-pix.yaml
var Document []byte

// ProblemTypeBase is what every problem type of the API Pix starts with:
// the type of PixDevolucaoInvalida is ProblemTypeBase+"PixDevolucaoInvalida".
const ProblemTypeBase = "https://pix.bcb.gov.br/api/v2/error/"

// ExtensionKey marks, with the value true, an operation of the document
// that is the bank's own (the transfer interface), not the specification's.
const ExtensionKey = "x-pixbank-extension"

// Options tune a Spec.
type Options struct {
	// BasePath is the path of the PSP's API base, the path of PSP_URL
	// ("/api/v2"): every request's path starts with it, and the document's
	// paths follow it. "" or "/" is the root.
	BasePath string
	// Unauthenticated leaves the operations' security unchecked: a PSP
	// without OAuth (the simulator's default). Otherwise every request
	// must carry "Authorization: Bearer <token>" (the token is opaque: its
	// scopes are the PSP's to check).
	Unauthenticated bool
}

// Spec is the document, ready to check exchanges. It is safe for
// concurrent use (oas.Document compiles each schema once, under its lock).
type Spec struct {
	basePath string
	doc      *oas.Document
	// auth meets the security schemes; nil: Options.Unauthenticated.
	auth    oas.Authenticate
	webhook *oas.Schema
}

// New parses the document. An error is a defect of the document.
func New(opts Options) (*Spec, error) {
	doc, err := oas.Parse("pspspec", Document)
	if err != nil {
		return nil, err
	}
	var webhook *oas.Schema
	for _, s := range doc.Schemas {
		if s.Name == "PixWebhook" {
			webhook = s
		}
	}
	if webhook == nil {
		return nil, errors.New("pspspec: the document has no PixWebhook schema")
	}
	s := &Spec{basePath: strings.TrimRight(opts.BasePath, "/"), doc: doc, webhook: webhook}
	if !opts.Unauthenticated {
		s.auth = bearerPresent
	}
	return s, nil
}

// root is the Spec at the root, authenticated, of the package-level
// functions.
var root = sync.OnceValues(func() (*Spec, error) { return New(Options{}) })

// ValidateRequest checks a request to the PSP at the root of its host
// (Options{}): see Spec.ValidateRequest.
func ValidateRequest(r *http.Request, body []byte) error {
	s, err := root()
	if err != nil {
		return err
	}
	return s.ValidateRequest(r, body)
}

// ValidateResponse checks an answer of the PSP at the root of its host
// (Options{}): see Spec.ValidateResponse.
func ValidateResponse(r *http.Request, status int, header http.Header, body []byte) error {
	s, err := root()
	if err != nil {
		return err
	}
	return s.ValidateResponse(r, status, header, body)
}

// ValidateWebhook checks the body of a webhook the PSP posts to
// {webhookUrl}/pix: see Spec.ValidateWebhook.
func ValidateWebhook(body []byte) error {
	s, err := root()
	if err != nil {
		return err
	}
	return s.ValidateWebhook(body)
}

// ValidateRequest checks that r, with body (r.Body is not read), is a
// documented operation's request: its path under the base path, its
// parameters, its body and, unless Options.Unauthenticated, a bearer
// token. nil: it keeps to the document.
func (s *Spec) ValidateRequest(r *http.Request, body []byte) error {
	req, err := s.rebase(r, body)
	if err != nil {
		return err
	}
	rt, err := s.route(req)
	if err != nil {
		return err
	}
	if errs := s.doc.ValidateRequest(rt, req, body, s.auth); len(errs) > 0 {
		return fmt.Errorf("%s %s: the request is not what the document says: %s", r.Method, r.URL.Path, apicontract.Describe(errs))
	}
	return nil
}

// ValidateResponse checks that status, header and body are an answer the
// document gives for r's operation: a documented status, its headers, its
// media type and body. nil: it keeps to the document.
func (s *Spec) ValidateResponse(r *http.Request, status int, header http.Header, body []byte) error {
	req, err := s.rebase(r, nil)
	if err != nil {
		return err
	}
	rt, err := s.route(req)
	if err != nil {
		return err
	}
	if errs := s.doc.ValidateResponse(rt, status, header, body); len(errs) > 0 {
		return fmt.Errorf("%s %s → %d: the answer is not what the document says: %s", r.Method, r.URL.Path, status, apicontract.Describe(errs))
	}
	return nil
}

// ValidateWebhook checks the body of a webhook the PSP posts to
// {webhookUrl}/pix (the callback of PUT /webhook/{chave}): {"pix":[Pix]}.
func (s *Spec) ValidateWebhook(body []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook body is not JSON: %w", err)
	}
	if err := s.doc.ValidateValue(s.webhook, v, "webhook body"); err != nil {
		return fmt.Errorf("webhook body is not what the document says: %w", err)
	}
	return nil
}

// Documented reports whether r (under the base path) is a documented
// operation: a recorder of all the traffic to a PSP checks those, and
// leaves the rest (a simulator's control routes) alone.
func (s *Spec) Documented(r *http.Request) bool {
	req, err := s.rebase(r, nil)
	if err != nil {
		return false
	}
	_, err = s.route(req)
	return err == nil
}

// Operation is one documented method of one path.
type Operation struct {
	Method string // upper case
	Path   string // as documented: /pix/{e2eid}/devolucao/{id}
	// Scopes are the OAuth scopes the operation requires.
	Scopes []string
	// Extension: the bank's own operation (x-pixbank-extension), not the
	// specification's.
	Extension bool
}

func (o Operation) String() string { return o.Method + " " + o.Path }

// Operations are the document's operations, in its order.
func (s *Spec) Operations() []Operation {
	var ops []Operation
	for _, item := range s.doc.Paths {
		for _, op := range item.Operations {
			o := Operation{Method: op.Method, Path: item.Path}
			for _, req := range op.Security {
				for _, scheme := range req {
					o.Scopes = append(o.Scopes, scheme.Scopes...)
				}
			}
			o.Extension, _ = op.Extensions[ExtensionKey].(bool)
			ops = append(ops, o)
		}
	}
	return ops
}

// rebase returns a request of r's method, headers and body whose path is
// r's without the base path: the document's paths follow it.
func (s *Spec) rebase(r *http.Request, body []byte) (*http.Request, error) {
	path := r.URL.EscapedPath()
	rest, ok := strings.CutPrefix(path, s.basePath)
	if !ok || (rest != "" && rest[0] != '/') {
		return nil, fmt.Errorf("%s %s: not under the base path %q", r.Method, path, s.basePath)
	}
	u := *r.URL
	u.Path, u.RawPath = "", rest
	if unescaped, err := url.PathUnescape(rest); err == nil {
		u.Path = unescaped
	}
	req, err := http.NewRequestWithContext(context.Background(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.Method, path, err)
	}
	req.Header = r.Header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	return req, nil
}

// route finds req's documented operation.
func (s *Spec) route(req *http.Request) (*oas.Route, error) {
	rt := s.doc.FindRoute(req.Method, req.URL.EscapedPath())
	if rt == nil || rt.Operation == nil {
		return nil, fmt.Errorf("%s %s: no such operation in the document", req.Method, req.URL.Path)
	}
	return rt, nil
}

// bearerPresent meets the OAuth2 scheme with an Authorization: Bearer
// header: the token is opaque, its scopes the PSP's to check.
func bearerPresent(r *http.Request, scheme *oas.SecurityScheme, _ []string) error {
	if !strings.EqualFold(scheme.Type, "oauth2") {
		return fmt.Errorf("scheme type %s is not checked", scheme.Type)
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return errors.New("no bearer token")
	}
	return nil
}
