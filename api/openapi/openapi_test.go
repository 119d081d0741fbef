package openapi

import (
	"os"
	"testing"
	"testing/fstest"

	"github.com/goccy/go-yaml"
	"github.com/stretchr/testify/require"
)

// Every document assembles from its embedded files.
func TestDocumentsAssemble(t *testing.T) {
	for _, name := range Names {
		_, err := assemble(sources, name)
		require.NoError(t, err, name)
		_, err = JSON(name)
		require.NoError(t, err, name)
	}
}

// The customer API document assembled from the base and the sagas'
// fragments holds exactly what the one hand-written pix-api.yaml held
// before the split (testdata/pix-api.yaml, a frozen copy of it): the split
// changed no route, schema or word of the contract. Paths and components
// added since (a new saga's fragment) are left out of the comparison, so
// adding one does not touch the frozen copy. A change of the contract
// made since to what the copy holds is made to the copy too, in the same
// words (the paged list of failed PIX, issue 35).
func TestPixAPIAssembledIsTheDocumentBeforeTheSplit(t *testing.T) {
	before, err := os.ReadFile("testdata/pix-api.yaml")
	require.NoError(t, err)
	var want, got map[string]any
	require.NoError(t, yaml.Unmarshal(before, &want))
	require.NoError(t, yaml.Unmarshal(YAML(PixAPI), &got))
	keepOnly := func(got, want map[string]any) {
		for key := range got {
			if _, ok := want[key]; !ok {
				delete(got, key)
			}
		}
	}
	keepOnly(got["paths"].(map[string]any), want["paths"].(map[string]any))
	wantComponents, gotComponents := want["components"].(map[string]any), got["components"].(map[string]any)
	keepOnly(gotComponents, wantComponents)
	for kind, entries := range gotComponents {
		keepOnly(entries.(map[string]any), wantComponents[kind].(map[string]any))
	}
	require.Equal(t, want, got)
}

// A document without fragments is served as it is written: byte for
// byte, comments and order included.
func TestADocumentWithoutFragmentsIsItsFile(t *testing.T) {
	source := "# a comment\n" + base + "x-order: [b, a]\n"
	got, err := assemble(fstest.MapFS{"doc.yaml": {Data: []byte(source)}}, "doc")
	require.NoError(t, err)
	require.Equal(t, source, string(got))
}

const base = `openapi: 3.1.0
info: {title: t, version: "1"}
paths: {}
components:
  schemas:
    Error: {type: object}
`

func TestAssembleMergesFragmentsInNameOrder(t *testing.T) {
	got, err := assemble(fstest.MapFS{
		"doc.yaml": {Data: []byte(base)},
		"doc/b.yaml": {Data: []byte(`paths:
  /b: {get: {responses: {"200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/A"}}}}}}}
`)},
		"doc/a.yaml": {Data: []byte(`paths:
  /a: {get: {responses: {"404": {$ref: "#/components/responses/Missing"}}}}
components:
  schemas:
    A: {$ref: "#/components/schemas/Error"}
  responses:
    Missing: {description: none}
`)},
	}, "doc")
	require.NoError(t, err)
	var doc yaml.MapSlice
	require.NoError(t, yaml.UnmarshalWithOptions(got, &doc, yaml.UseOrderedMap()))
	paths := doc[indexOf(doc, "paths")].Value.(yaml.MapSlice)
	require.Equal(t, []any{"/a", "/b"}, []any{paths[0].Key, paths[1].Key})
	components := doc[indexOf(doc, "components")].Value.(yaml.MapSlice)
	schemas := components[indexOf(components, "schemas")].Value.(yaml.MapSlice)
	require.Equal(t, []any{"Error", "A"}, []any{schemas[0].Key, schemas[1].Key})
	require.NotEqual(t, -1, indexOf(components, "responses"))
	var status any
	require.NoError(t, yaml.Unmarshal(got, &status))
	require.Contains(t, status.(map[string]any)["paths"].(map[string]any)["/b"].(map[string]any)["get"].(map[string]any)["responses"], "200",
		"a status code stays a string key")
}

func TestAssembleRefuses(t *testing.T) {
	for _, c := range []struct {
		name      string
		fragments map[string]string
		want      string
	}{
		{"a path defined twice", map[string]string{
			"doc/a.yaml": "paths:\n  /x: {}\n", "doc/b.yaml": "paths:\n  /x: {}\n"},
			"doc/b.yaml: paths /x is already defined in doc/a.yaml"},
		{"a component the base defines", map[string]string{
			"doc/a.yaml": "components:\n  schemas:\n    Error: {type: string}\n"},
			"doc/a.yaml: schemas Error is already defined in doc.yaml"},
		{"a component defined twice", map[string]string{
			"doc/a.yaml": "components:\n  examples:\n    E: {value: 1}\n", "doc/b.yaml": "components:\n  examples:\n    E: {value: 2}\n"},
			"doc/b.yaml: examples E is already defined in doc/a.yaml"},
		{"a $ref to nothing", map[string]string{
			"doc/a.yaml": "paths:\n  /x: {get: {responses: {\"200\": {$ref: \"#/components/responses/Gone\"}}}}\n"},
			"$ref #/components/responses/Gone resolves to nothing"},
		{"a $ref outside the document", map[string]string{
			"doc/a.yaml": "components:\n  schemas:\n    A: {$ref: \"other.yaml#/A\"}\n"},
			"$ref other.yaml#/A resolves to nothing"},
		{"anything but paths and components", map[string]string{
			"doc/a.yaml": "info: {title: other}\n"},
			`doc/a.yaml: "info": a fragment holds only paths and components`},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsys := fstest.MapFS{"doc.yaml": {Data: []byte(base)}}
			for file, source := range c.fragments {
				fsys[file] = &fstest.MapFile{Data: []byte(source)}
			}
			_, err := assemble(fsys, "doc")
			require.ErrorContains(t, err, c.want)
		})
	}
}
