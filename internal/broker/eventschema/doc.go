// Package eventschema validates the service's events against their JSON
// Schemas (internal/broker/schemas): the tests' check that what the
// outbox writes and the relay publishes is what docs/events.md promises
// the consumers. Nothing in production imports it.
package eventschema
