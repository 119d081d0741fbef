package apicontract

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pixbank/pix/tooling/oas"
)

// Operation is one documented method of one path.
type Operation struct {
	Document string
	Method   string // upper case
	Path     string // as documented: /pix/credits/{end_to_end_id}
	Op       *oas.Operation
	model    *oas.Document
}

func (o Operation) String() string { return o.Method + " " + o.Path }

// Operations are the document's operations, in its order.
func (d *Document) Operations() []Operation {
	var ops []Operation
	for _, item := range d.Model.Paths {
		for _, op := range item.Operations {
			ops = append(ops, Operation{Document: d.Name, Method: op.Method, Path: item.Path, Op: op, model: d.Model})
		}
	}
	return ops
}

// ErrorCodes are the error codes the operation documents, by status: the
// enum of error.code in each answer's schema.
func (o Operation) ErrorCodes() map[string][]string {
	codes := map[string][]string{}
	for _, res := range o.Op.Responses {
		for _, media := range res.Content {
			if media.Schema != nil {
				codes[res.Status] = append(codes[res.Status], errorCodes(o.model, media.Schema.Value, nil, 0)...)
			}
		}
		slices.Sort(codes[res.Status])
		codes[res.Status] = slices.Compact(codes[res.Status])
	}
	return codes
}

// errorCodes collects the enums found at .error.code of schema (path is
// the members walked so far), through allOf.
func errorCodes(doc *oas.Document, schema any, path []string, depth int) []string {
	s, _ := doc.Resolve(schema, "")
	if s == nil || depth > 8 {
		return nil
	}
	var codes []string
	if slices.Equal(path, []string{"error", "code"}) {
		enum, _ := s["enum"].([]any)
		for _, v := range enum {
			codes = append(codes, fmt.Sprint(v))
		}
		if c, ok := s["const"]; ok {
			codes = append(codes, fmt.Sprint(c))
		}
	}
	allOf, _ := s["allOf"].([]any)
	for _, sub := range allOf {
		codes = append(codes, errorCodes(doc, sub, path, depth+1)...)
	}
	if props, ok := s["properties"].(map[string]any); ok && len(path) < 2 {
		for name, prop := range props {
			codes = append(codes, errorCodes(doc, prop, append(slices.Clone(path), name), depth+1)...)
		}
	}
	return codes
}

// ExampleProblems are the document's examples that do not keep to their
// own schemas: those of request and response bodies and parameters, and
// the examples of every schema in components.
func (d *Document) ExampleProblems() []string {
	var problems []string
	check := func(where string, schema *oas.Schema, value any) {
		if err := d.Model.ValidateValue(schema, value, where); err != nil {
			problems = append(problems, err.Error())
		}
	}
	media := func(where string, content []*oas.MediaType) {
		for _, m := range content {
			if m.Schema == nil {
				continue
			}
			if m.HasExample {
				check(where+" "+m.Type+" example", m.Schema, m.Example)
			}
			for _, ex := range m.Examples {
				check(where+" "+m.Type+" example "+ex.Name, m.Schema, ex.Value)
			}
		}
	}
	for _, op := range d.Operations() {
		for _, p := range op.Op.Parameters {
			if p.Schema != nil && p.HasExample {
				check(op.String()+" parameter "+p.Name, p.Schema, p.Example)
			}
		}
		if op.Op.RequestBody != nil {
			media(op.String()+" request", op.Op.RequestBody.Content)
		}
		for _, res := range op.Op.Responses {
			media(op.String()+" "+res.Status, res.Content)
		}
	}
	for _, s := range d.Model.Schemas {
		problems = append(problems, d.schemaExampleProblems("schema "+s.Name, s, 0)...)
	}
	return problems
}

// schemaExampleProblems checks the examples of s and of its members'
// schemas.
func (d *Document) schemaExampleProblems(where string, s *oas.Schema, depth int) []string {
	m, ptr := d.Model.Resolve(s.Value, s.Pointer)
	if m == nil || depth > 4 {
		return nil
	}
	var problems []string
	examples, _ := m["examples"].([]any)
	for i, ex := range examples {
		if err := d.Model.ValidateValue(s, ex, fmt.Sprintf("%s examples[%d]", where, i)); err != nil {
			problems = append(problems, err.Error())
		}
	}
	props, _ := m["properties"].(map[string]any)
	for _, name := range d.Model.Keys(ptr + "/properties") {
		prop := &oas.Schema{Pointer: ptr + "/properties/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(name), Value: props[name]}
		problems = append(problems, d.schemaExampleProblems(where+"."+name, prop, depth+1)...)
	}
	return problems
}
