package scheduled

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/sagakit"
)

// OverdueAfter is how long past its run_at a scheduled PIX still to run
// counts as overdue (pix_scheduled_overdue): its run was lost or is
// stuck, and PixScheduledOverdue pages.
const OverdueAfter = 15 * time.Minute

// WakeLateAfter is how long a cancel's wake-up may stay pending (its entry
// in pix_scheduled_cancel_wakes) before it counts as late
// (pix_scheduled_cancel_wakes_late): the dispatcher retries a failed
// signal within seconds of Temporal answering, so a wake-up this old means
// Temporal is still away or no wake dispatcher runs, and
// PixScheduledCancelWakeLate warns.
const WakeLateAfter = 5 * time.Minute

// concludedTotal counts the scheduled PIX concluded in this process, by
// status: executed and failed by their runs, cancelled by the API.
var concludedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pix_scheduled_concluded_total",
	Help: "Scheduled PIX concluded, by status: executed (its transfer made), failed (nothing debited), cancelled.",
}, []string{"status"})

// collectors are the saga's metrics: the counter, and the gauges read from
// PostgreSQL at each scrape.
func collectors(env saga.Env) []prometheus.Collector {
	store := NewStore(env.Store)
	return []prometheus.Collector{concludedTotal, &sagakit.ScrapeGauges[pendingCounts]{
		What: "scheduled pix gauges",
		Query: func(ctx context.Context) (pendingCounts, error) {
			var c pendingCounts
			var err error
			c.pending, c.overdue, c.wakesLate, err = store.Pending(ctx, OverdueAfter, WakeLateAfter)
			return c, err
		},
		Gauges: []sagakit.Gauge[pendingCounts]{
			{Desc: prometheus.NewDesc("pix_scheduled_pending",
				"Scheduled PIX still to run (status scheduled).", nil, nil),
				Value: func(c pendingCounts) float64 { return float64(c.pending) }},
			{Desc: prometheus.NewDesc("pix_scheduled_overdue",
				"Scheduled PIX still to run more than 15 minutes past their time: a run lost or stuck (PixScheduledOverdue).", nil, nil),
				Value: func(c pendingCounts) float64 { return float64(c.overdue) }},
			{Desc: prometheus.NewDesc("pix_scheduled_cancel_wakes_late",
				"Cancelled scheduled PIX whose run was not woken yet, more than 5 minutes after the cancel: Temporal away, or no wake dispatcher (PixScheduledCancelWakeLate).", nil, nil),
				Value: func(c pendingCounts) float64 { return float64(c.wakesLate) }},
		},
		Log: env.Log,
	}}
}

// pendingCounts are the scheduled PIX still to run, those overdue, and the
// cancels whose wake-up is late (Store.Pending), as a scrape reads them.
type pendingCounts struct{ pending, overdue, wakesLate int64 }
