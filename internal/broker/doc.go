// Package broker owns the connection to NATS JetStream: the event stream
// (PIX_EVENTS, subjects pix.events.>), publishing with the event id as
// Nats-Msg-Id so that the broker drops a re-publish, with tracing a publish
// span per event and its trace context in the message's headers
// (traceparent), and an embedded NATS server with JetStream for machines
// without one (make run without NATS_URL, and the tests, which stop and
// restart it).
package broker
