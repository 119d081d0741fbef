package metrics

import (
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"
)

// TemporalSDK returns the Temporal SDK's metrics handler, reporting into r
// under the SDK's own names (temporal_request_total,
// temporal_workflow_task_schedule_to_start_latency_seconds,
// temporal_activity_execution_failed_total, ...), with timers as
// histograms. The handler's scope reports every second until closer is
// closed.
func TemporalSDK(r *prometheus.Registry, log *slog.Logger) (handler client.MetricsHandler, closer io.Closer) {
	reporter := tallyprom.NewReporter(tallyprom.Options{
		Registerer:       r,
		DefaultTimerType: tallyprom.HistogramTimerType,
		DefaultHistogramBuckets: []float64{
			.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60,
		},
		// A metric the SDK names twice with other tags; Prometheus refuses
		// it, and the rest of the scrape goes on.
		OnRegisterError: func(err error) { log.Warn("temporal sdk metric not registered", "error", err) },
	})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:  reporter,
		Separator:       tallyprom.DefaultSeparator,
		SanitizeOptions: &sdktally.PrometheusSanitizeOptions,
	}, time.Second)
	return sdktally.NewMetricsHandler(sdktally.NewPrometheusNamingScope(scope)), closer
}
