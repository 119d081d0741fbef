package metrics

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// sdkLatencyBuckets are the boundaries, in seconds, of the Temporal SDK's
// latencies (its timers): from a millisecond (a local activity, a request
// to a near server) to a minute (a long poll).
var sdkLatencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// TemporalSDK returns the Temporal SDK's metrics handler: the SDK's own
// OpenTelemetry handler (go.temporal.io/sdk/contrib/opentelemetry) on a
// meter provider whose reader is OpenTelemetry's Prometheus exporter,
// registered on r, so that the SDK's metrics are served with the
// service's, read at each scrape. Their names are the SDK's in
// Prometheus's form, a counter's with _total and a timer's with _seconds
// (temporal_request_total,
// temporal_workflow_task_schedule_to_start_latency_seconds,
// temporal_activity_execution_failed_total, ...), timers as histograms
// (sdkLatencyBuckets), labels the SDK's tags as they are (task_queue
// "pix-credit"), and no otel_scope_* labels nor target_info.
func TemporalSDK(r *prometheus.Registry, log *slog.Logger) (client.MetricsHandler, error) {
	exporter, err := otelprom.New(otelprom.WithRegisterer(r), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("the temporal sdk's metrics: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter), sdkmetric.WithView(sdkmetric.NewView(
		sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram},
		sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: sdkLatencyBuckets}},
	)))
	return temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: provider.Meter("go.temporal.io/sdk"),
		// An instrument the meter refuses is left out (the handler's
		// default would panic); the rest are recorded.
		OnError: func(err error) { log.Warn("temporal sdk metric not recorded", "error", err) },
		// The SDK's counters only go up: Prometheus counters (_total),
		// not gauges.
		UseMonotonicCounters: true,
	}), nil
}
