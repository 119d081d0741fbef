package eventschema_test

import (
	"encoding/json"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/broker"
	"github.com/pixbank/pix/internal/broker/eventschema"
	// Every saga's event types, a saga package's included (db.DeclareEvents).
	_ "github.com/pixbank/pix/saga/registry"
)

// schema is a schema file of broker.Schemas, decoded.
func schema(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := fs.ReadFile(broker.Schemas, "schemas/"+name)
	require.NoError(t, err)
	var s map[string]any
	require.NoError(t, json.Unmarshal(b, &s))
	return s
}

// Every event type has a schema, and every schema an event type, of the
// aggregate the outbox writes it for; the envelope names exactly these.
func TestEveryEventTypeHasASchema(t *testing.T) {
	v, err := eventschema.New()
	require.NoError(t, err)
	types := slices.Sorted(maps.Keys(db.EventTypes))
	require.Equal(t, types, v.Types())

	aggregates := map[string]bool{}
	for _, typ := range types {
		s := schema(t, typ+".json")
		require.Equal(t, broker.SchemaBaseURL+typ+".json", s["$id"])
		require.Equal(t, "https://json-schema.org/draft/2020-12/schema", s["$schema"])
		props := s["properties"].(map[string]any)
		require.Equal(t, typ, props["type"].(map[string]any)["const"])
		require.Equal(t, db.EventTypes[typ], props["aggregate_type"].(map[string]any)["const"], typ)
		data := s["$defs"].(map[string]any)["data"].(map[string]any)
		require.Equal(t, false, data["additionalProperties"], "%s: strict", typ)
		require.ElementsMatch(t, slices.Collect(maps.Keys(data["properties"].(map[string]any))), data["required"],
			"%s: jsonb_build_object writes every member, null or not: each is required", typ)
		aggregates[db.EventTypes[typ]] = true
	}
	env := schema(t, eventschema.EnvelopeFile)
	require.Equal(t, false, env["additionalProperties"])
	props := env["properties"].(map[string]any)
	// The envelope admits every type and aggregate by its pattern; each
	// type's schema narrows them to its own.
	typePattern := regexp.MustCompile(props["type"].(map[string]any)["pattern"].(string))
	for _, typ := range types {
		require.Regexp(t, typePattern, typ)
	}
	aggregatePattern := regexp.MustCompile(props["aggregate_type"].(map[string]any)["pattern"].(string))
	for aggregate := range aggregates {
		require.Regexp(t, aggregatePattern, aggregate)
	}
	// The members of broker.Envelope, the publisher's, and no others.
	b, err := json.Marshal(broker.Envelope{Data: json.RawMessage(`{}`)})
	require.NoError(t, err)
	var members map[string]any
	require.NoError(t, json.Unmarshal(b, &members))
	require.ElementsMatch(t, slices.Collect(maps.Keys(members)), slices.Collect(maps.Keys(props)))
	require.ElementsMatch(t, slices.Collect(maps.Keys(members)), env["required"])
}

// Each schema's example validates; a member added to or missing from the
// payload or the envelope, a type that is not the schema's, a malformed id
// or time does not.
func TestSchemasAreStrict(t *testing.T) {
	v, err := eventschema.New()
	require.NoError(t, err)
	for _, typ := range v.Types() {
		examples := schema(t, typ+".json")["examples"].([]any)
		require.NotEmpty(t, examples, typ)
		for _, example := range examples {
			good, err := json.Marshal(example)
			require.NoError(t, err)
			require.NoError(t, v.Message(good), typ)
			data, err := json.Marshal(example.(map[string]any)["data"])
			require.NoError(t, err)
			require.NoError(t, v.Payload(typ, data), typ)

			bad := func(name string, change func(e, data map[string]any)) {
				t.Helper()
				var e map[string]any
				require.NoError(t, json.Unmarshal(good, &e))
				change(e, e["data"].(map[string]any))
				b, err := json.Marshal(e)
				require.NoError(t, err)
				require.Error(t, v.Message(b), "%s: %s", typ, name)
			}
			bad("a member added to the payload", func(_, d map[string]any) { d["extra"] = 1 })
			bad("a member added to the envelope", func(e, _ map[string]any) { e["trace_id"] = "abc" })
			bad("another schema version", func(_, d map[string]any) { d["schema_version"] = 2 })
			bad("an amount as text", func(_, d map[string]any) { d["amount_cents"] = "100" })
			bad("a negative amount", func(_, d map[string]any) { d["amount_cents"] = -1 })
			bad("an id that is not a UUID", func(e, _ map[string]any) { e["id"] = "not-a-uuid" })
			bad("a time that is not one", func(e, _ map[string]any) { e["occurred_at"] = "yesterday" })
			bad("another type", func(e, _ map[string]any) {
				for _, other := range v.Types() {
					if other != typ {
						e["type"] = other
					}
				}
			})
			bad("an unknown type", func(e, _ map[string]any) { e["type"] = "pix.credit.lost" })
			for member := range example.(map[string]any)["data"].(map[string]any) {
				bad("the payload without "+member, func(_, d map[string]any) { delete(d, member) })
			}
			for member := range example.(map[string]any) {
				bad("the envelope without "+member, func(e, _ map[string]any) { delete(e, member) })
			}
			require.Error(t, v.Payload(typ, []byte(`{"schema_version": 1}`)), typ)
		}
	}
	require.ErrorContains(t, v.Payload("pix.credit.lost", []byte(`{}`)), "has no schema")
}
