package broker

import "embed"

// Schemas are the events' JSON Schemas (draft 2020-12), as consumers get
// them (docs/events.md): schemas/envelope.json, the envelope of every
// message, and schemas/<type>.json for each event type, that envelope with
// the type's payload. They are strict (no member they do not name), so a
// field added to an event is a change to its schema too; the eventschema
// package validates against them.
//
//go:embed schemas/*.json
var Schemas embed.FS

// SchemaBaseURL is the base of the schemas' $id: their place in the
// repository.
const SchemaBaseURL = "https://github.com/pixbank/pix/blob/main/internal/broker/schemas/"
