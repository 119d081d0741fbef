package oas

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// Document is one parsed OpenAPI 3.1 document.
type Document struct {
	Name string
	// Root is the document as JSON values (objects map[string]any,
	// numbers json.Number), its references unresolved.
	Root map[string]any
	// Paths are the path items, in the document's order.
	Paths []*PathItem
	// Security is the document's security requirements, those of an
	// operation that names none of its own.
	Security []Requirement
	// SecuritySchemes are components.securitySchemes, by name.
	SecuritySchemes map[string]*SecurityScheme
	// Schemas are components.schemas, in the document's order.
	Schemas []*Schema

	node *yaml.Node // the document's YAML, for the order of its mappings
	url  string     // the document's URL as a JSON Schema resource

	mu       sync.Mutex // guards compiler and compiled
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

// PathItem is one path of the document and its operations.
type PathItem struct {
	Path       string // as documented: /pix/{e2eid}
	Operations []*Operation
	segments   []string
}

// Operation is one documented method of one path.
type Operation struct {
	Method string // upper case
	Path   string
	// Parameters are the path item's and the operation's (the operation's
	// win for the same name and place).
	Parameters  []*Parameter
	RequestBody *RequestBody
	// Responses are the documented answers, in the document's order, by
	// status as written: "200", "4XX", "default".
	Responses []*Response
	// Security is the operation's own security requirements; nil when it
	// names none (the document's then apply). An empty, non-nil list:
	// none required.
	Security []Requirement
	// Extensions are the operation's x- members.
	Extensions map[string]any
}

// Parameter is a parameter of an operation.
type Parameter struct {
	Name     string
	In       string // path, query, header, cookie
	Required bool
	Style    string
	Explode  bool
	Schema   *Schema
	// Example is the parameter's example, when HasExample.
	Example    any
	HasExample bool
}

// RequestBody is an operation's request body.
type RequestBody struct {
	Required bool
	Content  []*MediaType
}

// Response is one documented answer of an operation.
type Response struct {
	Status  string
	Headers []*Header
	Content []*MediaType
}

// Header is a documented header of an answer.
type Header struct {
	Name     string
	Required bool
	Schema   *Schema
}

// MediaType is one media type of a body, its schema and examples.
type MediaType struct {
	Type       string // as documented: application/json
	Schema     *Schema
	Example    any
	HasExample bool
	// Examples are the named examples' values.
	Examples []NamedValue
}

// NamedValue is a named example's value.
type NamedValue struct {
	Name  string
	Value any
}

// Requirement is one security requirement: every scheme it names, with
// the scopes it asks of each, is needed.
type Requirement []SchemeScopes

// SchemeScopes is a scheme a requirement names and its scopes.
type SchemeScopes struct {
	Scheme string
	Scopes []string
}

// SecurityScheme is a components.securitySchemes entry.
type SecurityScheme struct {
	Name         string // its key in components
	Type         string // apiKey, http, mutualTLS, oauth2, openIdConnect
	Scheme       string // of http: bearer, basic
	BearerFormat string
	In           string // of apiKey: header, query, cookie
	ParamName    string // of apiKey: the header's (or parameter's) name
}

// Schema is a schema of the document, by where it is.
type Schema struct {
	// Name is the component's name, for components.schemas.
	Name string
	// Pointer is the JSON pointer of the schema in the document.
	Pointer string
	// Value is the schema itself, a $ref in it unresolved.
	Value any
}

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Parse parses the OpenAPI document name from source. A document that is
// not OpenAPI 3.1 or holds a $ref that resolves to nothing is an error;
// the errors start with name.
func Parse(name string, source []byte) (*Document, error) {
	var node yaml.Node
	if err := yaml.Unmarshal(source, &node); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if node.Kind != yaml.DocumentNode || len(node.Content) != 1 || node.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not a YAML mapping", name)
	}
	value, err := jsonValue(node.Content[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	root := value.(map[string]any) //nolint:forcetypeassert // a mapping node, checked above
	if v, _ := root["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		return nil, fmt.Errorf("%s: openapi %q, want 3.1.x", name, root["openapi"])
	}
	if dangling := danglingRefs(root, root, ""); len(dangling) > 0 {
		return nil, fmt.Errorf("%s: references that resolve to nothing: %s", name, strings.Join(dangling, ", "))
	}
	d := &Document{Name: name, Root: root, node: node.Content[0], url: "https://openapi.invalid/" + url.PathEscape(name) + ".json",
		SecuritySchemes: map[string]*SecurityScheme{}, compiled: map[string]*jsonschema.Schema{}}
	if err := d.build(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	d.compiler = jsonschema.NewCompiler()
	d.compiler.AssertFormat()
	d.compiler.DefaultDraft(jsonschema.Draft2020)
	if err := d.compiler.AddResource(d.url, root); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}

// jsonValue is the JSON value of a YAML node: mappings with string keys,
// numbers as json.Number-compatible Go numbers, YAML timestamps as the
// strings they are in JSON.
func jsonValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.AliasNode:
		return jsonValue(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a mapping key that is not a scalar", n.Content[i].Line)
			}
			v, err := jsonValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := jsonValue(c)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	case yaml.ScalarNode:
		return scalar(n)
	}
	return nil, fmt.Errorf("line %d: an unexpected YAML node", n.Line)
}

func scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool", "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		if i, ok := v.(int); ok {
			return int64(i), nil
		}
		return v, nil
	}
	return n.Value, nil
}

// danglingRefs are the $refs under v (at ptr) that resolve to nothing in
// root, or that are not local.
func danglingRefs(root, v any, ptr string) []string {
	var dangling []string
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			if _, err := resolvePointer(root, ref); err != nil {
				dangling = append(dangling, fmt.Sprintf("%s at %s (%v)", ref, ptr, err))
			}
		}
		for _, k := range sortedKeys(v) {
			dangling = append(dangling, danglingRefs(root, v[k], ptr+"/"+escapeToken(k))...)
		}
	case []any:
		for i, e := range v {
			dangling = append(dangling, danglingRefs(root, e, ptr+"/"+strconv.Itoa(i))...)
		}
	}
	return dangling
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// resolvePointer is the value a local reference ("#/components/...")
// names in root.
func resolvePointer(root any, ref string) (any, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, errors.New("not a local reference")
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil, err
	}
	if frag == "" {
		return root, nil
	}
	if frag[0] != '/' {
		return nil, errors.New("not a JSON pointer")
	}
	v := root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("no member %q", tok)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("no item %q", tok)
			}
			v = c[i]
		default:
			return nil, fmt.Errorf("no member %q of a scalar", tok)
		}
	}
	return v, nil
}

func escapeToken(tok string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
}

// Resolve follows the $refs of v, an object of the document at ptr (a
// parameter, a response, a schema...), to what they name: the object and
// its pointer. nil: v is not an object.
func (d *Document) Resolve(v any, ptr string) (map[string]any, string) {
	return d.deref(v, ptr)
}

func (d *Document) deref(v any, ptr string) (map[string]any, string) {
	for range 16 {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, ptr
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, ptr
		}
		next, err := resolvePointer(d.Root, ref)
		if err != nil { // checked by Parse
			return nil, ptr
		}
		v, ptr = next, strings.TrimPrefix(ref, "#")
		if unescaped, err := url.PathUnescape(ptr); err == nil {
			ptr = unescaped
		}
	}
	return nil, ptr
}

// Keys are the keys of the mapping at ptr (a JSON pointer), in the
// document's order.
func (d *Document) Keys(ptr string) []string { return d.keys(ptr) }

func (d *Document) keys(ptr string) []string {
	n := d.node
	if ptr != "" {
		for _, tok := range strings.Split(ptr[1:], "/") {
			tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
			n = member(n, tok)
			if n == nil {
				return nil
			}
		}
	}
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	var keys []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		keys = append(keys, n.Content[i].Value)
	}
	return keys
}

func member(n *yaml.Node, tok string) *yaml.Node {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == tok {
				return n.Content[i+1]
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i]
		}
	}
	return nil
}
