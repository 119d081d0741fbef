package oas

import (
	"fmt"
	"strings"
)

// build reads the document's paths, security and components into the
// model, its references followed.
func (d *Document) build() error {
	paths, _ := d.Root["paths"].(map[string]any)
	for _, path := range d.keys("/paths") {
		itemPtr := "/paths/" + escapeToken(path)
		item, itemPtr := d.deref(paths[path], itemPtr)
		if item == nil {
			return fmt.Errorf("paths %s: not an object", path)
		}
		pi := &PathItem{Path: path, segments: strings.Split(strings.Trim(path, "/"), "/")}
		shared, err := d.parameters(item["parameters"], itemPtr+"/parameters")
		if err != nil {
			return fmt.Errorf("paths %s: %w", path, err)
		}
		for _, method := range methods {
			op, ok := item[method].(map[string]any)
			if !ok {
				continue
			}
			o, err := d.operation(op, itemPtr+"/"+method, shared)
			if err != nil {
				return fmt.Errorf("%s %s: %w", strings.ToUpper(method), path, err)
			}
			o.Method, o.Path = strings.ToUpper(method), path
			pi.Operations = append(pi.Operations, o)
		}
		d.Paths = append(d.Paths, pi)
	}
	if sec, ok := d.Root["security"]; ok {
		d.Security = requirements(sec)
	}
	components, _ := d.Root["components"].(map[string]any)
	schemes, _ := components["securitySchemes"].(map[string]any)
	for name, v := range schemes {
		s, _ := d.deref(v, "/components/securitySchemes/"+escapeToken(name))
		d.SecuritySchemes[name] = &SecurityScheme{Name: name, Type: str(s, "type"), Scheme: str(s, "scheme"),
			BearerFormat: str(s, "bearerFormat"), In: str(s, "in"), ParamName: str(s, "name")}
	}
	schemas, _ := components["schemas"].(map[string]any)
	for _, name := range d.keys("/components/schemas") {
		d.Schemas = append(d.Schemas, &Schema{Name: name, Pointer: "/components/schemas/" + escapeToken(name), Value: schemas[name]})
	}
	return nil
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func (d *Document) operation(op map[string]any, ptr string, shared []*Parameter) (*Operation, error) {
	o := &Operation{Extensions: map[string]any{}}
	own, err := d.parameters(op["parameters"], ptr+"/parameters")
	if err != nil {
		return nil, err
	}
	o.Parameters = append(o.Parameters, own...)
	for _, p := range shared {
		if !containsParameter(own, p) {
			o.Parameters = append(o.Parameters, p)
		}
	}
	if op["requestBody"] != nil {
		rb, rbPtr := d.deref(op["requestBody"], ptr+"/requestBody")
		if rb == nil {
			return nil, fmt.Errorf("requestBody: not an object")
		}
		required, _ := rb["required"].(bool)
		o.RequestBody = &RequestBody{Required: required, Content: d.content(rb, rbPtr)}
	}
	responses, _ := op["responses"].(map[string]any)
	for _, status := range d.keys(ptr + "/responses") {
		res, resPtr := d.deref(responses[status], ptr+"/responses/"+escapeToken(status))
		if res == nil {
			return nil, fmt.Errorf("responses %s: not an object", status)
		}
		r := &Response{Status: status, Content: d.content(res, resPtr)}
		headers, _ := res["headers"].(map[string]any)
		for _, name := range d.keys(resPtr + "/headers") {
			h, hPtr := d.deref(headers[name], resPtr+"/headers/"+escapeToken(name))
			required, _ := h["required"].(bool)
			r.Headers = append(r.Headers, &Header{Name: name, Required: required, Schema: schemaAt(h, hPtr)})
		}
		o.Responses = append(o.Responses, r)
	}
	if sec, ok := op["security"]; ok {
		o.Security = requirements(sec)
	}
	for k, v := range op {
		if strings.HasPrefix(k, "x-") {
			o.Extensions[k] = v
		}
	}
	return o, nil
}

func containsParameter(ps []*Parameter, p *Parameter) bool {
	for _, q := range ps {
		if q.In == p.In && (q.Name == p.Name || (q.In == "header" && strings.EqualFold(q.Name, p.Name))) {
			return true
		}
	}
	return false
}

func (d *Document) parameters(v any, ptr string) ([]*Parameter, error) {
	list, _ := v.([]any)
	var ps []*Parameter
	for i, raw := range list {
		m, mPtr := d.deref(raw, fmt.Sprintf("%s/%d", ptr, i))
		if m == nil {
			return nil, fmt.Errorf("parameter %d: not an object", i)
		}
		p := &Parameter{Name: str(m, "name"), In: str(m, "in"), Style: str(m, "style"), Schema: schemaAt(m, mPtr)}
		p.Required, _ = m["required"].(bool)
		if p.Style == "" {
			p.Style = map[string]string{"query": "form", "cookie": "form", "path": "simple", "header": "simple"}[p.In]
		}
		p.Explode = p.Style == "form"
		if e, ok := m["explode"].(bool); ok {
			p.Explode = e
		}
		p.Example, p.HasExample = m["example"]
		if _, ok := m["content"]; ok {
			return nil, fmt.Errorf("parameter %s: content is not supported (a schema is)", p.Name)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

func schemaAt(m map[string]any, ptr string) *Schema {
	if s, ok := m["schema"]; ok {
		return &Schema{Pointer: ptr + "/schema", Value: s}
	}
	return nil
}

// content is the media types of the content of m (a request body, an
// answer) at ptr.
func (d *Document) content(m map[string]any, ptr string) []*MediaType {
	content, _ := m["content"].(map[string]any)
	var mts []*MediaType
	for _, mt := range d.keys(ptr + "/content") {
		mPtr := ptr + "/content/" + escapeToken(mt)
		media, _ := content[mt].(map[string]any)
		t := &MediaType{Type: mt, Schema: schemaAt(media, mPtr)}
		t.Example, t.HasExample = media["example"]
		examples, _ := media["examples"].(map[string]any)
		for _, name := range d.keys(mPtr + "/examples") {
			if ex, _ := d.deref(examples[name], mPtr+"/examples/"+escapeToken(name)); ex != nil {
				if v, ok := ex["value"]; ok {
					t.Examples = append(t.Examples, NamedValue{Name: name, Value: v})
				}
			}
		}
		mts = append(mts, t)
	}
	return mts
}

// requirements reads a security requirements list.
func requirements(v any) []Requirement {
	list, _ := v.([]any)
	reqs := []Requirement{}
	for _, raw := range list {
		m, _ := raw.(map[string]any)
		req := Requirement{}
		for _, scheme := range sortedKeys(m) {
			var scopes []string
			for _, s := range asSlice(m[scheme]) {
				if s, ok := s.(string); ok {
					scopes = append(scopes, s)
				}
			}
			req = append(req, SchemeScopes{Scheme: scheme, Scopes: scopes})
		}
		reqs = append(reqs, req)
	}
	return reqs
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
