package scheduled

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixbank/pix/saga"
)

// OverdueAfter is how long past its run_at a scheduled PIX still to run
// counts as overdue (pix_scheduled_overdue): its run was lost or is
// stuck, and PixScheduledOverdue pages.
const OverdueAfter = 15 * time.Minute

// concludedTotal counts the scheduled PIX concluded in this process, by
// status: executed and failed by their runs, cancelled by the API.
var concludedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pix_scheduled_concluded_total",
	Help: "Scheduled PIX concluded, by status: executed (its transfer made), failed (nothing debited), cancelled.",
}, []string{"status"})

// collectors are the saga's metrics: the counter, and the gauges read from
// PostgreSQL at each scrape.
func collectors(env saga.Env) []prometheus.Collector {
	return []prometheus.Collector{concludedTotal, &pendingGauges{store: NewStore(env.Store), log: env.Log}}
}

var (
	pendingDesc = prometheus.NewDesc("pix_scheduled_pending",
		"Scheduled PIX still to run (status scheduled).", nil, nil)
	overdueDesc = prometheus.NewDesc("pix_scheduled_overdue",
		"Scheduled PIX still to run more than 15 minutes past their time: a run lost or stuck (PixScheduledOverdue).", nil, nil)
)

// pendingGauges reads pix_scheduled_pending and pix_scheduled_overdue at
// each scrape; a scrape PostgreSQL can't answer reports neither (the
// scrape's other metrics still go out) and logs why.
type pendingGauges struct {
	store *Store
	log   *slog.Logger
}

func (g *pendingGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- overdueDesc
}

func (g *pendingGauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pending, overdue, err := g.store.Pending(ctx, OverdueAfter)
	if err != nil {
		g.log.Warn("scheduled pix gauges not read", "error", err)
		return
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(pending))
	ch <- prometheus.MustNewConstMetric(overdueDesc, prometheus.GaugeValue, float64(overdue))
}
