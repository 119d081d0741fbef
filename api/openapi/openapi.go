package openapi

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/goccy/go-yaml"
)

// The documents, by name: each is <name>.yaml here, merged with the
// fragments <name>/*.yaml when it has some (assemble), served as
// /openapi/<name>.json and /openapi/<name>.yaml.
const (
	// Webhooks is the PSP-facing webhooks' document.
	Webhooks = "webhooks"
	// PixAPI is the customer, admin, codec and operations routes' document.
	PixAPI = "pix-api"
)

// Names are every document's name.
var Names = []string{Webhooks, PixAPI}

//go:embed webhooks.yaml webhooks/*.yaml pix-api.yaml pix-api/*.yaml
var sources embed.FS

// assembled are the documents' YAML, each assembled once from its files.
var assembled = sync.OnceValues(func() (map[string][]byte, error) {
	documents := make(map[string][]byte, len(Names))
	for _, name := range Names {
		b, err := assemble(sources, name)
		if err != nil {
			return nil, err
		}
		documents[name] = b
	}
	return documents, nil
})

// YAML is the document name in YAML, assembled from its files. It panics
// on a name not in Names or on files that do not assemble (both
// programming errors: the files are embedded, and TestDocumentsAssemble
// loads them); JSON answers the same failure as an error.
func YAML(name string) []byte {
	documents, err := assembled()
	if err != nil {
		panic(err.Error())
	}
	b, ok := documents[name]
	if !ok {
		panic(fmt.Sprintf("openapi: no document %q", name))
	}
	return b
}

// jsonForms are the documents' JSON forms, converted once.
var jsonForms = sync.OnceValues(func() (map[string][]byte, error) {
	documents, err := assembled()
	if err != nil {
		return nil, err
	}
	forms := make(map[string][]byte, len(Names))
	for _, name := range Names {
		b, err := toJSON(documents[name])
		if err != nil {
			return nil, fmt.Errorf("openapi: %s.yaml to JSON: %w", name, err)
		}
		forms[name] = b
	}
	return forms, nil
})

// JSON is the document name in JSON, converted from its YAML (members in
// the YAML's order, indented).
func JSON(name string) ([]byte, error) {
	forms, err := jsonForms()
	if err != nil {
		return nil, err
	}
	b, ok := forms[name]
	if !ok {
		return nil, fmt.Errorf("openapi: no document %q", name)
	}
	return b, nil
}

func toJSON(source []byte) ([]byte, error) {
	compact, err := yaml.YAMLToJSON(source)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact, "", "  "); err != nil {
		return nil, fmt.Errorf("the converted document is not JSON: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
