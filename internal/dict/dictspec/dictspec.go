package dictspec

import (
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/beevik/etree"
	"github.com/goccy/go-yaml"
	"github.com/google/uuid"

	"github.com/pixbank/pix/internal/rfc3339"
)

// Document is dict-api.yaml.
//
//go:embed dict-api.yaml
var Document []byte

// ProblemTypeBase is what every problem type of the DICT starts with.
const ProblemTypeBase = "https://dict.pi.rsfn.net.br/api/v1/error/"

// SignatureNamespace is the XML Digital Signature's namespace, the one of
// every Signature element.
const SignatureNamespace = "http://www.w3.org/2000/09/xmldsig#"

// Schema is a schema of the document: the subset of OpenAPI it uses.
type Schema struct {
	Ref        string             `yaml:"$ref"`
	Type       string             `yaml:"type"`
	Enum       []string           `yaml:"enum"`
	Pattern    string             `yaml:"pattern"`
	Format     string             `yaml:"format"`
	MaxLength  int                `yaml:"maxLength"`
	Minimum    *int64             `yaml:"minimum"`
	Maximum    *int64             `yaml:"maximum"`
	Properties map[string]*Schema `yaml:"properties"`
	Required   []string           `yaml:"required"`
	Items      *Schema            `yaml:"items"`
	XML        struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
		Prefix    string `yaml:"prefix"`
		Wrapped   bool   `yaml:"wrapped"`
	} `yaml:"xml"`
}

// Parameter is an operation's parameter.
type Parameter struct {
	Name     string  `yaml:"name"`
	In       string  `yaml:"in"`
	Required bool    `yaml:"required"`
	Schema   *Schema `yaml:"schema"`
}

type content map[string]struct {
	Schema *Schema `yaml:"schema"`
}

type response struct {
	Ref     string  `yaml:"$ref"`
	Content content `yaml:"content"`
}

// Operation is one documented method of one path.
type Operation struct {
	Method string `yaml:"-"` // upper case
	Path   string `yaml:"-"` // as documented: /infraction-reports/{InfractionReportId}/close
	ID     string `yaml:"operationId"`
	// Signed: the request carries an enveloped XML Digital Signature.
	Signed bool `yaml:"x-signed"`
	// Policies are the rate-limit policies the operation draws from.
	Policies    []string    `yaml:"x-policy"`
	Parameters  []Parameter `yaml:"parameters"`
	RequestBody *struct {
		Content content `yaml:"content"`
	} `yaml:"requestBody"`
	Responses map[string]*response `yaml:"responses"`
}

func (o *Operation) String() string { return o.Method + " " + o.Path }

// Policy is a rate-limit policy of the specification's table.
type Policy struct {
	Scope           string `yaml:"scope"`
	RefillPerMinute int    `yaml:"refillPerMinute"`
	BucketSize      int    `yaml:"bucketSize"`
}

type document struct {
	Paths        map[string]map[string]*Operation `yaml:"paths"`
	ProblemTypes []string                         `yaml:"x-problem-types"`
	Policies     map[string]Policy                `yaml:"x-policies"`
	Components   struct {
		Responses map[string]*response `yaml:"responses"`
		Schemas   map[string]*Schema   `yaml:"schemas"`
	} `yaml:"components"`
}

// Spec is the document, ready to check exchanges. It is safe for
// concurrent use: it is never changed after Load.
type Spec struct {
	doc      document
	ops      []*Operation
	patterns map[string]*regexp.Regexp
}

// Load parses the document once; an error is a defect of the document.
var Load = sync.OnceValues(func() (*Spec, error) {
	s := &Spec{patterns: map[string]*regexp.Regexp{}}
	if err := yaml.Unmarshal(Document, &s.doc); err != nil {
		return nil, fmt.Errorf("dictspec: %w", err)
	}
	for _, path := range slices.Sorted(maps.Keys(s.doc.Paths)) {
		for _, method := range slices.Sorted(maps.Keys(s.doc.Paths[path])) {
			op := s.doc.Paths[path][method]
			op.Method, op.Path = strings.ToUpper(method), path
			s.ops = append(s.ops, op)
		}
	}
	var errs []error
	var compile func(*Schema)
	compile = func(sch *Schema) {
		if sch == nil {
			return
		}
		if sch.Ref != "" {
			if _, ok := s.doc.Components.Schemas[strings.TrimPrefix(sch.Ref, "#/components/schemas/")]; !ok {
				errs = append(errs, fmt.Errorf("dictspec: no schema %s", sch.Ref))
			}
		}
		if sch.Pattern != "" && s.patterns[sch.Pattern] == nil {
			re, err := regexp.Compile(sch.Pattern)
			if err != nil {
				errs = append(errs, fmt.Errorf("dictspec: pattern %q: %w", sch.Pattern, err))
			}
			s.patterns[sch.Pattern] = re
		}
		for _, p := range sch.Properties {
			compile(p)
		}
		compile(sch.Items)
	}
	for _, sch := range s.doc.Components.Schemas {
		compile(sch)
	}
	for _, op := range s.ops {
		for _, p := range op.Parameters {
			compile(p.Schema)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
})

// Operations are the document's operations, by path and method.
func (s *Spec) Operations() []*Operation { return slices.Clone(s.ops) }

// ProblemTypes are the problem types the document declares, in full
// (ProblemTypeBase + name).
func (s *Spec) ProblemTypes() []string {
	out := make([]string, len(s.doc.ProblemTypes))
	for i, t := range s.doc.ProblemTypes {
		out[i] = ProblemTypeBase + t
	}
	return out
}

// Policies are the rate-limit policies of the operations the document
// holds, by name.
func (s *Spec) Policies() map[string]Policy { return maps.Clone(s.doc.Policies) }

// Find returns the operation of method and path (relative to the DICT's
// base) and its path parameters.
func (s *Spec) Find(method, path string) (*Operation, map[string]string, error) {
	got := strings.Split(path, "/")
	for _, op := range s.ops {
		if op.Method != method {
			continue
		}
		want := strings.Split(op.Path, "/")
		if len(want) != len(got) {
			continue
		}
		params := map[string]string{}
		ok := true
		for i := range want {
			if name, isParam := strings.CutPrefix(want[i], "{"); isParam {
				if got[i] == "" {
					ok = false
					break
				}
				params[strings.TrimSuffix(name, "}")] = got[i]
			} else if want[i] != got[i] {
				ok = false
				break
			}
		}
		if ok {
			return op, params, nil
		}
	}
	return nil, nil, fmt.Errorf("%s %s: no such operation in the document", method, path)
}

// CheckRequest checks that r (its path relative to the DICT's base, its
// query, its headers) with body is a documented operation's request:
// every query parameter declared, the required ones present, every value
// of its schema; a body only where one is documented, in XML, closed (no
// element the document does not name), with its signature where the
// operation is signed. nil: it keeps to the document.
func (s *Spec) CheckRequest(r *http.Request, body []byte) error {
	op, pathParams, err := s.Find(r.Method, r.URL.Path)
	if err != nil {
		return err
	}
	var errs []error
	query := r.URL.Query()
	for _, p := range op.Parameters {
		var values []string
		switch p.In {
		case "path":
			values = []string{pathParams[p.Name]}
		case "query":
			values = query[p.Name]
			delete(query, p.Name)
		case "header":
			values = r.Header.Values(p.Name)
		}
		if len(values) == 0 {
			if p.Required {
				errs = append(errs, fmt.Errorf("%s parameter %s missing", p.In, p.Name))
			}
			continue
		}
		sch := s.resolve(p.Schema)
		if sch.Type != "array" && len(values) > 1 {
			errs = append(errs, fmt.Errorf("%s parameter %s given %d times", p.In, p.Name, len(values)))
		}
		if sch.Type == "array" {
			sch = s.resolve(sch.Items)
		}
		for _, v := range values {
			if err := s.checkValue(sch, v); err != nil {
				errs = append(errs, fmt.Errorf("%s parameter %s: %w", p.In, p.Name, err))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(query)) {
		errs = append(errs, fmt.Errorf("query parameter %s: not in the document", name))
	}
	switch {
	case op.RequestBody == nil && len(body) > 0:
		errs = append(errs, errors.New("a body where the document has none"))
	case op.RequestBody != nil:
		errs = append(errs, s.checkBody(op.RequestBody.Content, r.Header.Get("Content-Type"), body, true, true))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s (%s): the request is not what the document says: %w", op, op.ID, err)
	}
	return nil
}

// generalProblems are the statuses every operation may answer with a
// problem (the document's conventions).
var generalProblems = []int{http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable}

// CheckResponse checks that status, header and body are an answer the
// document gives to r's operation: a documented status (or a general
// problem: 429, 500, 503), its media type, its body (open: elements the
// document does not name are allowed, as the specification says answers
// may grow; every element it names must keep to its schema).
func (s *Spec) CheckResponse(r *http.Request, status int, header http.Header, body []byte) error {
	op, _, err := s.Find(r.Method, r.URL.Path)
	if err != nil {
		return err
	}
	resp := op.Responses[strconv.Itoa(status)]
	if resp == nil && slices.Contains(generalProblems, status) {
		resp = &response{Ref: "#/components/responses/Problem"}
	}
	if resp == nil {
		return fmt.Errorf("%s (%s) → %d: not a documented status", op, op.ID, status)
	}
	if resp.Ref != "" {
		resp = s.doc.Components.Responses[strings.TrimPrefix(resp.Ref, "#/components/responses/")]
	}
	// A 429 or 5xx says only "later": its signature is not required.
	if err := s.checkBody(resp.Content, header.Get("Content-Type"), body, false, status < 500 && status != http.StatusTooManyRequests); err != nil {
		return fmt.Errorf("%s (%s) → %d: the answer is not what the document says: %w", op, op.ID, status, err)
	}
	return nil
}

// checkBody checks an XML body of one of c's media types. closed: no
// element the document does not name; signed: the Signature is required
// where the schema requires it (an answer that says only "later" needs
// none).
func (s *Spec) checkBody(c content, contentType string, body []byte, closed, signed bool) error {
	media, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return fmt.Errorf("content type %q: %w", contentType, err)
	}
	mt, ok := c[media]
	if !ok {
		return fmt.Errorf("content type %s: the document has %v", media, slices.Sorted(maps.Keys(c)))
	}
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(body); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	if doc.Root() == nil {
		return errors.New("body: no root element")
	}
	sch := s.resolve(mt.Schema)
	if !signed {
		sch = withoutSignature(sch)
	}
	return s.checkElement(doc.Root(), sch, closed, "", "")
}

// withoutSignature is sch with Signature no longer required.
func withoutSignature(sch *Schema) *Schema {
	c := *sch
	c.Required = slices.DeleteFunc(slices.Clone(sch.Required), func(n string) bool { return n == "Signature" })
	return &c
}

func (s *Spec) resolve(sch *Schema) *Schema {
	for sch != nil && sch.Ref != "" {
		sch = s.doc.Components.Schemas[strings.TrimPrefix(sch.Ref, "#/components/schemas/")]
	}
	return sch
}

// checkElement checks el against sch (resolved). where names el in errors;
// ns is its parent's namespace, el's unless sch names another.
func (s *Spec) checkElement(el *etree.Element, sch *Schema, closed bool, where, ns string) error {
	where += "/" + el.Tag
	if sch.XML.Name != "" && el.Tag != sch.XML.Name {
		return fmt.Errorf("%s: the document names this element %s", where, sch.XML.Name)
	}
	if sch.XML.Namespace != "" {
		ns = sch.XML.Namespace
	}
	if got := el.NamespaceURI(); got != ns {
		return fmt.Errorf("%s: namespace %q, the document's is %q", where, got, ns)
	}
	switch sch.Type {
	case "object":
		if sch.Properties == nil {
			return nil // opaque: its content is not the bank's to check
		}
		var errs []error
		seen := map[string]bool{}
		for _, child := range el.ChildElements() {
			prop, ok := sch.Properties[child.Tag]
			if !ok {
				if closed {
					errs = append(errs, fmt.Errorf("%s/%s: not in the document", where, child.Tag))
				}
				continue
			}
			if seen[child.Tag] {
				errs = append(errs, fmt.Errorf("%s/%s: more than once", where, child.Tag))
			}
			seen[child.Tag] = true
			errs = append(errs, s.checkChild(child, s.resolve(prop), closed, where, ns))
		}
		for _, name := range sch.Required {
			if !seen[name] {
				errs = append(errs, fmt.Errorf("%s/%s: required, missing", where, name))
			}
		}
		return errors.Join(errs...)
	default:
		if len(el.ChildElements()) > 0 {
			return fmt.Errorf("%s: elements inside a value", where)
		}
		if err := s.checkValue(sch, strings.TrimSpace(el.Text())); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		return nil
	}
}

// checkChild checks a property's element: an array's wrapper holds its
// items, each named as the item schema says.
func (s *Spec) checkChild(child *etree.Element, sch *Schema, closed bool, where, ns string) error {
	if sch.Type != "array" {
		if sch.XML.Name == "" {
			c := *sch
			c.XML.Name = child.Tag
			sch = &c
		}
		return s.checkElement(child, sch, closed, where, ns)
	}
	item := s.resolve(sch.Items)
	var errs []error
	for _, it := range child.ChildElements() {
		errs = append(errs, s.checkElement(it, item, closed, where+"/"+child.Tag, ns))
	}
	return errors.Join(errs...)
}

// checkValue checks one value against a scalar schema.
func (s *Spec) checkValue(sch *Schema, v string) error {
	if len(sch.Enum) > 0 && !slices.Contains(sch.Enum, v) {
		return fmt.Errorf("%q is not one of %v", v, sch.Enum)
	}
	if sch.Pattern != "" && !s.patterns[sch.Pattern].MatchString(v) {
		return fmt.Errorf("%q does not match %s", v, sch.Pattern)
	}
	if sch.MaxLength > 0 && len([]rune(v)) > sch.MaxLength {
		return fmt.Errorf("longer than %d characters", sch.MaxLength)
	}
	switch sch.Format {
	case "uuid":
		if _, err := uuid.Parse(v); err != nil || len(v) != 36 {
			return fmt.Errorf("%q is not a uuid", v)
		}
	case "date-time":
		if _, err := ParseDateTime(v); err != nil {
			return err
		}
	}
	switch sch.Type {
	case "boolean":
		if v != "true" && v != "false" {
			return fmt.Errorf("%q is not a boolean", v)
		}
	case "integer":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		if sch.Minimum != nil && n < *sch.Minimum || sch.Maximum != nil && n > *sch.Maximum {
			return fmt.Errorf("%d is out of the document's range", n)
		}
	case "number":
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return fmt.Errorf("%q is not a number", v)
		}
	}
	return nil
}

// ParseDateTime reads v as RFC 3339's date-time, the document's format
// date-time (ModifiedAfter, ModifiedBefore, every instant of an answer):
// rfc3339.Parse, which the product's readers of the DICT's notices share.
func ParseDateTime(v string) (time.Time, error) { return rfc3339.Parse(v) }
