// Package setup builds a process's tracing (package tracing's Provider)
// from its Settings: the OpenTelemetry SDK with the exporter contrib's
// autoexport chooses from the standard variables (OTLP over HTTP or gRPC,
// the console), the resource (the build's version and revision, the
// process's service.instance.id) and the Temporal SDK's tracing
// interceptor.
// It is apart from package tracing so that what only carries trace context
// and makes spans (the store, the PSP client, the broker) links neither the
// exporters nor the Temporal SDK: only the processes' wiring (cmd/pixd/app)
// does.
package setup
