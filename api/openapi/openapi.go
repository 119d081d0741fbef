package openapi

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/goccy/go-yaml"
)

// The documents, by name: each is <name>.yaml here, served as
// /openapi/<name>.json and /openapi/<name>.yaml.
const (
	// Webhooks is the PSP-facing webhooks' document.
	Webhooks = "webhooks"
	// PixAPI is the customer, admin, codec and operations routes' document.
	PixAPI = "pix-api"
)

// Names are every document's name.
var Names = []string{Webhooks, PixAPI}

//go:embed webhooks.yaml pix-api.yaml
var sources embed.FS

// YAML is the source of the document name; it panics on a name not in
// Names (a programming error).
func YAML(name string) []byte {
	b, err := sources.ReadFile(name + ".yaml")
	if err != nil {
		panic(fmt.Sprintf("openapi: no document %q", name))
	}
	return b
}

// jsonForms are the documents' JSON forms, converted once.
var jsonForms = sync.OnceValues(func() (map[string][]byte, error) {
	forms := make(map[string][]byte, len(Names))
	for _, name := range Names {
		b, err := toJSON(YAML(name))
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
