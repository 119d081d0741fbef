package sagakit

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// OldestAge is a saga's "oldest ... age" gauge: how long its oldest row
// still open has been open, read from the database at each scrape (Read,
// within 2 seconds), as the core's are (metrics.RegisterDatabaseGauges),
// whose behaviour its alerts (PixTransferOpenTooLong, PixRefundOpenTooLong)
// were written against: a failed read is logged and reported as NaN, not
// as zero, nor left out as ScrapeGauges leaves its gauges.
type OldestAge struct {
	Desc *prometheus.Desc
	// What names the rows in the log line of a failed read ("the oldest
	// open transfer").
	What string
	Read func(ctx context.Context) (time.Duration, error)
	Log  *slog.Logger
}

// Describe sends the gauge's description.
func (g *OldestAge) Describe(ch chan<- *prometheus.Desc) { ch <- g.Desc }

// Collect reads the age and sends it, NaN when it could not be read.
func (g *OldestAge) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	seconds := math.NaN()
	if age, err := g.Read(ctx); err != nil {
		g.Log.Warn("metrics: could not read "+g.What, "error", err)
	} else {
		seconds = age.Seconds()
	}
	ch <- prometheus.MustNewConstMetric(g.Desc, prometheus.GaugeValue, seconds)
}
