// Package metrics owns the service's Prometheus metrics: the registry each
// process serves on GET /metrics, and the gauges computed at scrape time
// from PostgreSQL (the outbox's lag).
package metrics
