package block

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/sagakit"
)

// PastExpiryAfter is how long past its 72 hours an active block counts as
// overdue (pix_blocks_past_expiry): its release was lost or is stuck, and
// PixBlockOpenPast72h pages.
const PastExpiryAfter = 15 * time.Minute

// endedTotal counts the blocks ended in this process, by status and
// cause: released by an operator (the API), at the 72 hours or because
// the devolução was not made (the runs), returned (the runs).
var endedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pix_blocks_ended_total",
	Help: "Cautionary blocks ended, by status (released, returned) and cause (operator, expired, return_not_made, returned).",
}, []string{"status", "cause"})

// ages are the age label's values of pix_blocks_open, OpenCounts.ByAge's
// order.
var ages = [4]string{"under_24h", "24h_to_48h", "48h_to_72h", "over_72h"}

// collectors are the saga's metrics: the counter, and the gauges read from
// PostgreSQL at each scrape.
func collectors(env saga.Env) []prometheus.Collector {
	store := NewStore(env.Store)
	gauges := []sagakit.Gauge[OpenCounts]{
		{Desc: prometheus.NewDesc("pix_blocks_held_cents",
			"Centavos held by the active cautionary blocks.", nil, nil),
			Value: func(c OpenCounts) float64 { return float64(c.HeldCents) }},
		{Desc: prometheus.NewDesc("pix_blocks_past_expiry",
			"Active cautionary blocks more than 15 minutes past their 72 hours: a release lost or stuck (PixBlockOpenPast72h).", nil, nil),
			Value: func(c OpenCounts) float64 { return float64(c.PastExpiry) }},
	}
	for i, age := range ages {
		gauges = append(gauges, sagakit.Gauge[OpenCounts]{
			Desc: prometheus.NewDesc("pix_blocks_open",
				"Open cautionary blocks (active, or returning until their devolução ends), by age since created.",
				nil, prometheus.Labels{"age": age}),
			Value: func(c OpenCounts) float64 { return float64(c.ByAge[i]) }})
	}
	return []prometheus.Collector{endedTotal, &sagakit.ScrapeGauges[OpenCounts]{
		What:   "block gauges",
		Query:  func(ctx context.Context) (OpenCounts, error) { return store.Open(ctx, PastExpiryAfter) },
		Gauges: gauges,
		Log:    env.Log,
	}}
}
