package apicontract

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/pb33f/libopenapi/orderedmap"
)

// Operation is one documented method of one path.
type Operation struct {
	Document string
	Method   string // upper case
	Path     string // as documented: /pix/credits/{end_to_end_id}
	Op       *v3.Operation
}

func (o Operation) String() string { return o.Method + " " + o.Path }

// Operations are the document's operations, in its order.
func (d *Document) Operations() []Operation {
	var ops []Operation
	for path, item := range d.Model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			ops = append(ops, Operation{Document: d.Name, Method: strings.ToUpper(method), Path: path, Op: op})
		}
	}
	return ops
}

// ErrorCodes are the error codes the operation documents, by status: the
// enum of error.code in each answer's schema.
func (o Operation) ErrorCodes() map[string][]string {
	codes := map[string][]string{}
	if o.Op.Responses == nil {
		return codes
	}
	for status, res := range o.Op.Responses.Codes.FromOldest() {
		for _, media := range res.Content.FromOldest() {
			if media.Schema != nil {
				codes[status] = append(codes[status], errorCodes(media.Schema.Schema(), nil, 0)...)
			}
		}
		slices.Sort(codes[status])
		codes[status] = slices.Compact(codes[status])
	}
	return codes
}

// errorCodes collects the enums found at .error.code of schema (path is
// the members walked so far), through allOf.
func errorCodes(s *base.Schema, path []string, depth int) []string {
	if s == nil || depth > 8 {
		return nil
	}
	var codes []string
	if slices.Equal(path, []string{"error", "code"}) {
		for _, n := range s.Enum {
			codes = append(codes, n.Value)
		}
		if s.Const != nil {
			codes = append(codes, s.Const.Value)
		}
	}
	for _, sub := range s.AllOf {
		codes = append(codes, errorCodes(sub.Schema(), path, depth+1)...)
	}
	if len(path) < 2 && s.Properties != nil {
		for name, prop := range s.Properties.FromOldest() {
			codes = append(codes, errorCodes(prop.Schema(), append(slices.Clone(path), name), depth+1)...)
		}
	}
	return codes
}

// ExampleProblems are the document's examples that do not keep to their
// own schemas: those of request and response bodies and parameters, and
// the examples of every schema in components.
func (d *Document) ExampleProblems() []string {
	sv := schema_validation.NewSchemaValidator(config.WithFormatAssertions())
	var problems []string
	check := func(where string, schema *base.Schema, value *yaml.Node) {
		if schema == nil || value == nil {
			return
		}
		var v any
		if err := value.Decode(&v); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", where, err))
			return
		}
		b, err := json.Marshal(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", where, err))
			return
		}
		if ok, errs := sv.ValidateSchemaBytes(schema, b); !ok {
			problems = append(problems, fmt.Sprintf("%s: %s", where, Describe(errs)))
		}
	}
	media := func(where string, content *orderedmap.Map[string, *v3.MediaType]) {
		for mt, m := range content.FromOldest() {
			if m.Schema == nil {
				continue
			}
			s := m.Schema.Schema()
			check(where+" "+mt+" example", s, m.Example)
			for name, ex := range m.Examples.FromOldest() {
				check(where+" "+mt+" example "+name, s, ex.Value)
			}
		}
	}
	for _, op := range d.Operations() {
		for _, p := range op.Op.Parameters {
			if p.Schema != nil {
				check(op.String()+" parameter "+p.Name, p.Schema.Schema(), p.Example)
			}
		}
		if op.Op.RequestBody != nil {
			media(op.String()+" request", op.Op.RequestBody.Content)
		}
		if op.Op.Responses != nil {
			for status, res := range op.Op.Responses.Codes.FromOldest() {
				media(op.String()+" "+status, res.Content)
			}
		}
	}
	if d.Model.Components != nil {
		for name, proxy := range d.Model.Components.Schemas.FromOldest() {
			problems = append(problems, schemaExampleProblems(sv, "schema "+name, proxy.Schema(), 0)...)
		}
	}
	return problems
}

// schemaExampleProblems checks the examples of s and of its members'
// schemas.
func schemaExampleProblems(sv schema_validation.SchemaValidator, where string, s *base.Schema, depth int) []string {
	if s == nil || depth > 4 {
		return nil
	}
	var problems []string
	for i, ex := range s.Examples {
		var v any
		if err := ex.Decode(&v); err != nil {
			problems = append(problems, fmt.Sprintf("%s examples[%d]: %v", where, i, err))
			continue
		}
		b, _ := json.Marshal(v) //nolint:errcheck // decoded from YAML: marshals
		if ok, errs := sv.ValidateSchemaBytes(s, b); !ok {
			problems = append(problems, fmt.Sprintf("%s examples[%d]: %s", where, i, Describe(errs)))
		}
	}
	if s.Properties != nil {
		for name, prop := range s.Properties.FromOldest() {
			problems = append(problems, schemaExampleProblems(sv, where+"."+name, prop.Schema(), depth+1)...)
		}
	}
	return problems
}
