// Package metrics owns the service's Prometheus metrics: the registry each
// process serves on GET /metrics, the gauges computed at scrape time from
// PostgreSQL (the outbox's lag, read through Database: the package imports
// no store; a saga's own metrics are its package's, as the
// reconciliation's gauges are saga/reconcile's), and the Temporal SDK's
// metrics handler,
// the SDK's OpenTelemetry one exporting into that same registry (one
// stack: no second metrics library beside client_golang and
// OpenTelemetry's).
package metrics
