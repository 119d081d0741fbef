package catchup

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixbank/pix/saga"
)

// Metrics counts what the PSP catch-up found in the PSP's own record of
// the PIX it received (GET /pix), and how far its Schedule has covered it.
// A nil *Metrics counts nothing.
type Metrics struct {
	found    *prometheus.CounterVec
	rejected *prometheus.CounterVec
	covered  prometheus.Gauge
}

// Reasons a PIX the catch-up listed was not stored (Metrics.Rejected).
const (
	// ReasonPayloadMismatch: stored already with other money fields
	// (amount, key, txid): never credited twice; a human must look.
	ReasonPayloadMismatch = "payload_mismatch"
	// ReasonInvalid: our decoder refused the item (a money field missing
	// or malformed), as it would refuse a webhook's.
	ReasonInvalid = "invalid"
	// ReasonRefused: the inbox refused it otherwise.
	ReasonRefused = "refused"
)

// metricsKey keeps the catch-up's metrics in a saga.Process.
type metricsKey struct{}

// metricsOf are env's process's metrics: what the descriptor's activities
// count into, and its Collectors register (once per process, on its
// registry).
func metricsOf(env saga.Env) *Metrics { return saga.Kept(env.Process, metricsKey{}, newMetrics) }

// newMetrics are the catch-up's metrics, registered nowhere yet.
func newMetrics() *Metrics {
	c := &Metrics{
		found: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pix_psp_catchup_found_total",
			Help: "PIX the PSP catch-up stored first: received by the PSP, never notified to us, by whether they name a charge (txid=\"true\": the PSP notifies those, so each is a webhook lost; txid=\"false\": a PIX to a key, which the API Pix does not notify).",
		}, []string{"txid"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pix_psp_catchup_rejected_total",
			Help: "PIX the PSP catch-up listed and did not store, by reason (payload_mismatch: stored with other money fields, never credited twice; invalid: a money field our decoder refuses; refused: the inbox refused it). Each is logged with its end_to_end_id and needs a human. A PIX is listed again at each run whose window holds it.",
		}, []string{"reason"}),
		covered: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pix_psp_catchup_covered_until_timestamp_seconds",
			Help: "The end of the window the scheduled PSP catch-up has covered (Unix time): every PIX the PSP created before it is in the inbox. Alert when it grows old; 0 until a run of this worker read it.",
		}),
	}
	for _, v := range []string{"true", "false"} {
		c.found.WithLabelValues(v)
	}
	for _, v := range []string{ReasonPayloadMismatch, ReasonInvalid, ReasonRefused} {
		c.rejected.WithLabelValues(v)
	}
	return c
}

// NewMetrics registers a catch-up's metrics of its own on r (a test's):
// its counters and the covered window's gauge.
func NewMetrics(r prometheus.Registerer) *Metrics {
	c := newMetrics()
	r.MustRegister(c.collectors(true)...)
	return c
}

// collectors are the counters, and, when scheduled (PSP_CATCHUP_INTERVAL
// is not 0), the gauge of the covered window: a worker whose Schedule is
// off exports no coverage, so that nothing alerts on a catch-up turned off
// on purpose.
func (c *Metrics) collectors(scheduled bool) []prometheus.Collector {
	out := []prometheus.Collector{c.found, c.rejected}
	if scheduled {
		out = append(out, c.covered)
	}
	return out
}

// Found counts one PIX first stored by the catch-up; txid says whether it
// names a charge.
func (c *Metrics) Found(txid bool) {
	if c == nil {
		return
	}
	v := "false"
	if txid {
		v = "true"
	}
	c.found.WithLabelValues(v).Inc()
}

// Rejected counts one PIX listed and not stored, by reason
// (ReasonPayloadMismatch, ReasonInvalid, ReasonRefused).
func (c *Metrics) Rejected(reason string) {
	if c != nil {
		c.rejected.WithLabelValues(reason).Inc()
	}
}

// Covered publishes the end of the covered window.
func (c *Metrics) Covered(until time.Time) {
	if c != nil {
		c.covered.Set(float64(until.UnixNano()) / 1e9)
	}
}
