package sagakit

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ScrapeTimeout bounds the query of ScrapeGauges when it names none: a
// scrape waits no longer for PostgreSQL.
const ScrapeTimeout = 5 * time.Second

// ScrapeGauges are gauges read from the database at each scrape, all from
// one query's answer (T): a saga's rows still open, those overdue. They are
// what the database says at the scrape, never a count kept in a process
// (which every replica would keep of its own, and lose at restart). A
// scrape whose query fails or times out reports none of them, and logs
// why: the scrape's other metrics still go out, and an alert on a gauge
// sees it absent rather than a made-up 0.
type ScrapeGauges[T any] struct {
	// What names the gauges in the log line of a failed read ("scheduled
	// pix gauges").
	What string
	// Query reads what the gauges report, once per scrape.
	Query func(ctx context.Context) (T, error)
	// Gauges are the metrics, each its value of the query's answer.
	Gauges []Gauge[T]
	// Timeout bounds Query; 0: ScrapeTimeout.
	Timeout time.Duration
	Log     *slog.Logger
}

// Gauge is one metric of ScrapeGauges: its description (no variable
// labels) and its value of the query's answer.
type Gauge[T any] struct {
	Desc  *prometheus.Desc
	Value func(T) float64
}

// Describe sends every gauge's description.
func (g *ScrapeGauges[T]) Describe(ch chan<- *prometheus.Desc) {
	for _, gauge := range g.Gauges {
		ch <- gauge.Desc
	}
}

// Collect runs the query and sends every gauge's value, or nothing.
func (g *ScrapeGauges[T]) Collect(ch chan<- prometheus.Metric) {
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = ScrapeTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	answer, err := g.Query(ctx)
	if err != nil {
		g.Log.Warn(g.What+" not read", "error", err)
		return
	}
	for _, gauge := range g.Gauges {
		ch <- prometheus.MustNewConstMetric(gauge.Desc, prometheus.GaugeValue, gauge.Value(answer))
	}
}
