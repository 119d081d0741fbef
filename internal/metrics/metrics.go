// Package metrics owns the service's Prometheus metrics: the registry each
// process serves on GET /metrics, and the gauges computed at scrape time
// from PostgreSQL (the outbox's lag).
package metrics

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pixbank/pix/db"
)

// New returns a registry with the Go runtime and process collectors.
func New() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Handler serves the registry in the Prometheus text format.
func Handler(r *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(r, promhttp.HandlerOpts{Registry: r})
}

// RegisterOutboxLag adds the outbox's lag, read from PostgreSQL at each
// scrape: how many events wait for the broker, and for how long the oldest
// has. A failed read is logged and reported as NaN, not as zero.
func RegisterOutboxLag(r *prometheus.Registry, store *db.Store, log *slog.Logger) {
	read := func() (db.OutboxLag, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		lag, err := store.OutboxLag(ctx)
		if err != nil {
			log.Warn("metrics: could not read the outbox lag", "error", err)
			return db.OutboxLag{}, false
		}
		return lag, true
	}
	nan := func(v float64, ok bool) float64 {
		if !ok {
			return math.NaN()
		}
		return v
	}
	r.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pix_outbox_unpublished_events",
			Help: "Events committed but not yet acknowledged by the broker.",
		}, func() float64 { l, ok := read(); return nan(float64(l.Unpublished), ok) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pix_outbox_oldest_unpublished_age_seconds",
			Help: "Age of the oldest event not yet acknowledged by the broker (0 when none waits).",
		}, func() float64 { l, ok := read(); return nan(l.OldestAge, ok) }),
	)
}
