package eventschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pixbank/pix/internal/broker"
)

// EnvelopeFile is the envelope's schema, among broker.Schemas.
const EnvelopeFile = "envelope.json"

// Validator validates events: a message by its type's schema, a payload
// by its type's payload schema. Formats (uuid, date-time) are asserted.
type Validator struct {
	envelope *jsonschema.Schema
	messages map[string]*jsonschema.Schema // by event type
	payloads map[string]*jsonschema.Schema
}

// New compiles every schema of broker.Schemas.
func New() (*Validator, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	files, err := fs.Glob(broker.Schemas, "schemas/*.json")
	if err != nil {
		return nil, err
	}
	var types []string
	for _, file := range files {
		b, err := fs.ReadFile(broker.Schemas, file)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", file, err)
		}
		name := path.Base(file)
		if err := c.AddResource(broker.SchemaBaseURL+name, doc); err != nil {
			return nil, fmt.Errorf("schema %s: %w", file, err)
		}
		if name != EnvelopeFile {
			types = append(types, strings.TrimSuffix(name, ".json"))
		}
	}
	v := &Validator{messages: map[string]*jsonschema.Schema{}, payloads: map[string]*jsonschema.Schema{}}
	if v.envelope, err = c.Compile(broker.SchemaBaseURL + EnvelopeFile); err != nil {
		return nil, err
	}
	for _, t := range types {
		if v.messages[t], err = c.Compile(broker.SchemaBaseURL + t + ".json"); err != nil {
			return nil, err
		}
		if v.payloads[t], err = c.Compile(broker.SchemaBaseURL + t + ".json#/$defs/data"); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Types are the event types that have a schema, sorted.
func (v *Validator) Types() []string {
	var out []string
	for t := range v.messages {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Message validates a message body: the envelope, and the whole by its
// type's schema (a type without one is an error).
func (v *Validator) Message(body []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("event: %w", err)
	}
	if err := v.envelope.Validate(doc); err != nil {
		return fmt.Errorf("event envelope: %w", err)
	}
	var e struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		return fmt.Errorf("event: %w", err)
	}
	s, ok := v.messages[e.Type]
	if !ok {
		return fmt.Errorf("event type %q has no schema", e.Type)
	}
	if err := s.Validate(doc); err != nil {
		return fmt.Errorf("event %s: %w", e.Type, err)
	}
	return nil
}

// Payload validates an event's payload (an outbox row's, the envelope's
// data) by its type's schema.
func (v *Validator) Payload(eventType string, payload []byte) error {
	s, ok := v.payloads[eventType]
	if !ok {
		return fmt.Errorf("event type %q has no schema", eventType)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("%s payload: %w", eventType, err)
	}
	if err := s.Validate(doc); err != nil {
		return fmt.Errorf("%s payload: %w", eventType, err)
	}
	return nil
}
