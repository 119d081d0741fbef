// Package tracing owns the process's OpenTelemetry tracing: the settings
// read from the standard OTEL_* variables (off when none asks for an
// exporter: nothing is dialed then), the Provider that what is traced is
// handed (built by package setup, with the exporters and the Temporal SDK's
// tracing interceptor), errors recorded by their type only, the
// propagators (OTEL_PROPAGATORS', through contrib's autoprop, at the
// boundaries with the outside; W3C tracecontext between the service's own
// processes), the link from a request's span to the trace context its
// caller sent (never its parent), and the trace context that travels
// in database rows across the service's asynchronous hops (the webhook's
// commit to the dispatcher's start, an event's commit to the relay's
// publish), as a W3C traceparent.
//
// The Provider is passed explicitly to what it instruments (never only
// through otel's globals), so that several service stacks in one test
// binary each record their own spans. Off, it instruments nothing: the
// routers, the pool, the PSP client and the Temporal client are built
// exactly as without tracing, and the rows' traceparent is NULL.
package tracing
