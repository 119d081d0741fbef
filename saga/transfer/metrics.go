package transfer

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/sagakit"
)

// Metrics counts the transfers the saga finished. A nil *Metrics counts
// nothing. Activities run at least once: a retried activity whose first
// run's answer was lost counts twice.
type Metrics struct {
	finished *prometheus.CounterVec
}

// Finished counts one transfer settled or refunded (its status).
func (m *Metrics) Finished(outcome string) {
	if m != nil {
		m.finished.WithLabelValues(outcome).Inc()
	}
}

// metricsKey keeps the transfer's metrics in a saga.Process.
type metricsKey struct{}

// metricsOf are env's process's metrics: what the descriptor's activities
// count into, and its Collectors register (once per process, on its
// registry).
func metricsOf(env saga.Env) *Metrics { return saga.Kept(env.Process, metricsKey{}, newMetrics) }

// newMetrics are the transfer's metrics, registered nowhere yet.
func newMetrics() *Metrics {
	return &Metrics{finished: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pix_transfers_finished_total",
		Help: "Outgoing PIX settled or refunded.",
	}, []string{"outcome"})}
}

// collectors are the saga's metrics: the counter, and the age of the
// oldest open transfer read from PostgreSQL at each scrape: how long money
// has been out of a balance and with nobody yet (PixTransferOpenTooLong).
func collectors(env saga.Env) []prometheus.Collector {
	return []prometheus.Collector{metricsOf(env).finished, &sagakit.OldestAge{
		Desc: prometheus.NewDesc("pix_transfer_oldest_open_age_seconds",
			"Age of the oldest outgoing transfer debited and not yet settled nor refunded (0 when none is open).", nil, nil),
		What: "the oldest open transfer", Read: NewStore(env.Store).OldestOpenTransferAge, Log: env.Log}}
}
