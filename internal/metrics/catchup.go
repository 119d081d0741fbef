package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// CatchUp counts what the PSP catch-up found in the PSP's own record of
// the PIX it received (GET /pix), and how far its Schedule has covered it.
// A nil *CatchUp counts nothing.
type CatchUp struct {
	found    *prometheus.CounterVec
	rejected *prometheus.CounterVec
	covered  prometheus.Gauge
}

// Reasons a PIX the catch-up listed was not stored (CatchUp.Rejected).
const (
	// CatchUpPayloadMismatch: stored already with other money fields
	// (amount, key, txid): never credited twice; a human must look.
	CatchUpPayloadMismatch = "payload_mismatch"
	// CatchUpInvalid: our decoder refused the item (a money field missing
	// or malformed), as it would refuse a webhook's.
	CatchUpInvalid = "invalid"
	// CatchUpRefused: the inbox refused it otherwise.
	CatchUpRefused = "refused"
)

// NewCatchUp registers the catch-up's counters on r, and, when scheduled
// (PSP_CATCHUP_INTERVAL is not 0), the gauge of its covered window: a
// worker whose Schedule is off exports no coverage, so that nothing
// alerts on a catch-up turned off on purpose.
func NewCatchUp(r *prometheus.Registry, scheduled bool) *CatchUp {
	c := &CatchUp{
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
	for _, v := range []string{CatchUpPayloadMismatch, CatchUpInvalid, CatchUpRefused} {
		c.rejected.WithLabelValues(v)
	}
	r.MustRegister(c.found, c.rejected)
	if scheduled {
		r.MustRegister(c.covered)
	}
	return c
}

// Found counts one PIX first stored by the catch-up; txid says whether it
// names a charge.
func (c *CatchUp) Found(txid bool) {
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
// (CatchUpPayloadMismatch, CatchUpInvalid, CatchUpRefused).
func (c *CatchUp) Rejected(reason string) {
	if c != nil {
		c.rejected.WithLabelValues(reason).Inc()
	}
}

// Covered publishes the end of the covered window.
func (c *CatchUp) Covered(until time.Time) {
	if c != nil {
		c.covered.Set(float64(until.UnixNano()) / 1e9)
	}
}
