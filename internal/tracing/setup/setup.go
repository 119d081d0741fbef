package setup

import (
	"context"
	"errors"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"

	"github.com/pixbank/pix/internal/tracing"
)

// New builds the TracerProvider the settings describe, its spans
// recorded under service.name s.ServiceName, or serviceName when that is
// empty. Off settings give Off: nothing is built and nothing is dialed.
// Exporters connect on their first export, so New succeeds while the
// collector is down.
func New(ctx context.Context, s tracing.Settings, serviceName string) (*tracing.Provider, error) {
	if !s.Enabled() {
		return tracing.Off(), nil
	}
	if s.ServiceName != "" {
		serviceName = s.ServiceName
	}
	// OTEL_RESOURCE_ATTRIBUTES first; the service's name last, so that it
	// is the one OTEL_SERVICE_NAME or the process chose.
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", serviceName)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithRawSpanLimits(spanLimits(os.Getenv))}
	for _, name := range s.Exporters {
		exporter, err := newExporter(ctx, name, s)
		if err != nil {
			return nil, err
		}
		opts = append(opts, sdktrace.WithBatcher(exporter))
	}
	// The sampler is the SDK's: OTEL_TRACES_SAMPLER, by default every trace
	// whose parent is sampled (or that has no parent).
	sdk := sdktrace.NewTracerProvider(opts...)
	return tracing.NewProvider(sdk, serviceName), nil
}

// DefaultAttributeValueLength bounds each span attribute's value (the
// SDK's own default is no bound) unless OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT
// or OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT sets one: a request's user agent,
// host and path are the caller's text, and a span must not carry 64 KiB of
// it to the collector (a batch over its request limit loses every span in
// it).
const DefaultAttributeValueLength = 256

// spanLimits are the SDK's limits from the OTEL_SPAN_* and OTEL_ATTRIBUTE_*
// variables, with DefaultAttributeValueLength when none bounds the values.
func spanLimits(getenv func(string) string) sdktrace.SpanLimits {
	limits := sdktrace.NewSpanLimits()
	if getenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT") == "" && getenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT") == "" {
		limits.AttributeValueLengthLimit = DefaultAttributeValueLength
	}
	return limits
}

func newExporter(ctx context.Context, name string, s tracing.Settings) (sdktrace.SpanExporter, error) {
	var (
		exporter sdktrace.SpanExporter
		err      error
	)
	switch {
	case name == tracing.ExporterConsole:
		w := s.Console
		if w == nil {
			w = os.Stdout
		}
		exporter, err = stdouttrace.New(stdouttrace.WithWriter(w))
	case s.Protocol == tracing.ProtocolGRPC:
		exporter, err = otlptracegrpc.New(ctx)
	default:
		exporter, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: %s exporter: %w", name, err)
	}
	return exporter, nil
}

// TemporalInterceptor is the Temporal SDK's tracing interceptor on p, for the client's options: the client's workflow starts and
// signals, and, since the workers inherit the client's interceptors, every
// workflow run, activity and local activity, carry the trace context in
// their Temporal headers. nil when tracing is off. Queries (the UI
// reading a run) are not traced: they are no part of a PIX's work.
func TemporalInterceptor(p *tracing.Provider) (interceptor.Interceptor, error) {
	if !p.Enabled() {
		return nil, nil
	}
	i, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer:              p.Tracer("go.temporal.io/sdk"),
		TextMapPropagator:   tracing.Propagator(),
		DisableQueryTracing: true,
	})
	if err != nil {
		return nil, fmt.Errorf("temporal tracing interceptor: %w", err)
	}
	return i, nil
}
