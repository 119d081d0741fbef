package setup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/google/uuid"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"

	"github.com/pixbank/pix/internal/buildinfo"
	"github.com/pixbank/pix/internal/tracing"
)

// New builds the TracerProvider the settings describe, its spans
// recorded under service.name s.ServiceName, or serviceName when that is
// empty, exported by s.SpanExporter or else by the exporter contrib's
// autoexport makes of OTEL_TRACES_EXPORTER and OTEL_EXPORTER_OTLP_*. Off
// settings give Off: nothing is built and nothing is dialed. Exporters
// connect on their first export, so New succeeds while the collector is
// down.
func New(ctx context.Context, s tracing.Settings, serviceName string) (*tracing.Provider, error) {
	if !s.Enabled() {
		return tracing.Off(), nil
	}
	if s.ServiceName != "" {
		serviceName = s.ServiceName
	}
	res, err := newResource(ctx, serviceName)
	if err != nil {
		return nil, err
	}
	exporter := s.SpanExporter
	if exporter == nil {
		if exporter, err = autoexport.NewSpanExporter(ctx); err != nil {
			return nil, fmt.Errorf("tracing: OTEL_TRACES_EXPORTER=%s: %w", s.Exporter, err)
		}
	}
	// The sampler is the SDK's: OTEL_TRACES_SAMPLER, by default every trace
	// whose parent is sampled (or that has no parent).
	sdk := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithRawSpanLimits(spanLimits(os.Getenv)),
		sdktrace.WithBatcher(exporter))
	return tracing.NewProvider(sdk, serviceName, s), nil
}

// instanceID is the process's service.instance.id: a random UUID, as the
// semantic conventions recommend, the same for every provider the process
// builds.
var instanceID = sync.OnceValue(func() string { return uuid.NewString() })

// newResource is what every span of the process is recorded under: the
// build (service.version and its VCS revision, buildinfo's, the version
// pixd version prints), the process (service.instance.id), then
// OTEL_RESOURCE_ATTRIBUTES, which may set any of them (an orchestrator's
// pod name as the instance, say), and last the service's name, the one
// OTEL_SERVICE_NAME or the process chose.
func newResource(ctx context.Context, serviceName string) (*resource.Resource, error) {
	build := buildinfo.Read()
	res, err := resource.New(ctx,
		resource.WithAttributes(
			semconv.ServiceVersion(build.Version),
			semconv.VCSRefHeadRevision(build.Revision),
			semconv.ServiceInstanceID(instanceID())),
		resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(serviceName)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing resource: %w", err)
	}
	return res, nil
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
