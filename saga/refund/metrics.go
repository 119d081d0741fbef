package refund

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/sagakit"
)

// Metrics counts the devoluções the saga finished. A nil *Metrics counts
// nothing. Activities run at least once: a retried activity whose first
// run's answer was lost counts twice.
type Metrics struct {
	finished *prometheus.CounterVec
}

// Finished counts one devolução returned or reversed (its status).
func (m *Metrics) Finished(outcome string) {
	if m != nil {
		m.finished.WithLabelValues(outcome).Inc()
	}
}

// metricsKey keeps the devolução's metrics in a saga.Process.
type metricsKey struct{}

// metricsOf are env's process's metrics: what the descriptor's activities
// count into, and its Collectors register (once per process, on its
// registry).
func metricsOf(env saga.Env) *Metrics { return saga.Kept(env.Process, metricsKey{}, newMetrics) }

// newMetrics are the devolução's metrics, registered nowhere yet.
func newMetrics() *Metrics {
	return &Metrics{finished: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pix_refunds_finished_total",
		Help: "Devoluções of received PIX returned by the PSP or reversed (the PSP did not make them).",
	}, []string{"outcome"})}
}

// collectors are the saga's metrics: the counter, and the age of the
// oldest open devolução read from PostgreSQL at each scrape: how long
// money has been out of a balance and with nobody yet
// (PixRefundOpenTooLong).
func collectors(env saga.Env) []prometheus.Collector {
	return []prometheus.Collector{metricsOf(env).finished, &sagakit.OldestAge{
		Desc: prometheus.NewDesc("pix_refund_oldest_open_age_seconds",
			"Age of the oldest devolução debited and not yet returned or reversed (0 when none is open).", nil, nil),
		What: "the oldest open refund", Read: NewStore(env.Store).OldestOpenRefundAge, Log: env.Log}}
}
