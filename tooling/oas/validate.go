package oas

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// oas31Schema is the OpenAPI Initiative's published JSON Schema of
// OpenAPI 3.1 documents, https://spec.openapis.org/oas/3.1/schema/2022-10-07
// (Apache-2.0, the OpenAPI Initiative), byte for byte the copy
// libopenapi v0.41.8 embeds (datamodel/schemas/oas31-schema.json). It
// references only the JSON Schema 2020-12 meta-schemas, which the
// validator has built in: validating a document needs no network.
//
//go:embed oas31-schema.json
var oas31Schema []byte

const oas31SchemaURL = "https://spec.openapis.org/oas/3.1/schema/2022-10-07"

var specSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(oas31Schema))
	if err != nil {
		return nil, fmt.Errorf("oas31-schema.json: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(oas31SchemaURL, doc); err != nil {
		return nil, fmt.Errorf("oas31-schema.json: %w", err)
	}
	return c.Compile(oas31SchemaURL)
})

// Validate checks the document against the OpenAPI 3.1 specification's
// own schema. The error, a *Error, says where and why.
func (d *Document) Validate() error {
	s, err := specSchema()
	if err != nil {
		return err
	}
	return schemaError(s.Validate(d.Root), d.Name+" (OpenAPI 3.1)")
}
