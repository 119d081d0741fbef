// Package broker owns the connection to NATS JetStream: the event stream
// (PIX_EVENTS, subjects pix.events.>), publishing with the event id as
// Nats-Msg-Id so that the broker drops a re-publish, with tracing a publish
// span per event and its trace context in the message's headers
// (traceparent). The service is only a client: the broker is NATS_URL's
// (make run and the tests start a nats-server process, never one inside
// pixd).
package broker
