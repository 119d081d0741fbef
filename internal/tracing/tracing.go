package tracing

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/contrib/propagators/autoprop"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Settings are what the OTEL_* variables say about tracing. The exporter
// itself is chosen by contrib's autoexport from OTEL_TRACES_EXPORTER and
// OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL, and reads the rest of its
// OTEL_EXPORTER_OTLP_* variables (endpoint, headers, timeout,
// certificates, compression) itself; the SDK reads OTEL_TRACES_SAMPLER*,
// OTEL_BSP_* and OTEL_RESOURCE_ATTRIBUTES.
type Settings struct {
	// Exporter is the exporter OTEL_TRACES_EXPORTER names ("otlp" when
	// only an OTLP endpoint is set); "": tracing is off.
	Exporter string
	// ServiceName is OTEL_SERVICE_NAME; "" takes the process's default.
	ServiceName string
	// Propagators are OTEL_PROPAGATORS' names, each one autoprop knows;
	// none: the specification's default, tracecontext and baggage.
	Propagators []string
	// SpanExporter, when set, takes the spans instead of the exporter
	// OTEL_TRACES_EXPORTER names, and turns tracing on: a test's recorder.
	SpanExporter sdktrace.SpanExporter
}

// Enabled reports whether the settings ask for an exporter.
func (s Settings) Enabled() bool { return s.Exporter != "" || s.SpanExporter != nil }

// Propagator is the propagator OTEL_PROPAGATORS names, for the boundaries
// with the outside: what a caller's request carries (linked, never
// continued: Provider.LinkCaller), the PSP calls and the NATS messages.
func (s Settings) Propagator() propagation.TextMapPropagator {
	if len(s.Propagators) == 0 {
		return propagator
	}
	p, err := autoprop.TextMapPropagator(s.Propagators...)
	if err != nil { // SettingsFrom refused it already
		return propagator
	}
	return p
}

// SettingsFrom reads the tracing settings through lookup (os.LookupEnv in
// production: autoexport reads the exporter's variables from the
// environment itself). Tracing is off unless something asks for an
// exporter: OTEL_TRACES_EXPORTER naming one, or, with it unset, an OTLP
// endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). The specification's default
// exporter, OTLP to localhost, would have every process without a
// collector dial for nothing; so unset means off here.
// OTEL_SDK_DISABLED=true turns it off whatever else is set. An exporter
// autoexport does not know fails setup.New, at the process's start.
func SettingsFrom(lookup func(string) (string, bool)) (Settings, error) {
	get := func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}
	var s Settings
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") {
		return Settings{}, nil
	}
	switch name := get("OTEL_TRACES_EXPORTER"); {
	case name == "none":
		return Settings{}, nil
	case name != "":
		s.Exporter = name
	case get("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "":
		s.Exporter = "otlp"
	default:
		return Settings{}, nil // the zero Settings: off
	}
	s.ServiceName = get("OTEL_SERVICE_NAME")
	if names := get("OTEL_PROPAGATORS"); names != "" {
		for _, name := range strings.Split(names, ",") {
			s.Propagators = append(s.Propagators, strings.TrimSpace(name))
		}
		if _, err := autoprop.TextMapPropagator(s.Propagators...); err != nil {
			return Settings{}, fmt.Errorf("OTEL_PROPAGATORS: %w", err)
		}
	}
	return s, nil
}

// propagator is the specification's default: W3C tracecontext and
// baggage.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Propagator carries the trace context between the service's own
// processes, in the Temporal headers: W3C tracecontext (and baggage),
// whatever OTEL_PROPAGATORS says, as the rows' traceparent does, so that
// a PIX stays one trace even while the API and the worker were started
// with different variables.
func Propagator() propagation.TextMapPropagator { return propagator }

// Provider is a process's tracing: its TracerProvider, or off. A nil
// *Provider is off.
type Provider struct {
	tp trace.TracerProvider
	// sdk is the provider package setup built, flushed and stopped by
	// Shutdown; nil when off or handed in (FromTracerProvider).
	sdk *sdktrace.TracerProvider
	// service is the service.name spans are recorded under ("" when handed in).
	service string
	// propagator is OTEL_PROPAGATORS' (Settings.Propagator).
	propagator propagation.TextMapPropagator
}

// Off is tracing off: no exporter, no span.
func Off() *Provider { return nil }

// FromTracerProvider traces into tp, which the caller owns (and shuts
// down): a test's in-memory recorder, say. Errors are redacted as with
// setup.New.
func FromTracerProvider(tp trace.TracerProvider) *Provider {
	return &Provider{tp: redacting{tp}, propagator: propagator}
}

// NewProvider is the Provider of sdk, a provider package setup built, its
// spans recorded under service.name serviceName, its propagator s's;
// errors are redacted as with FromTracerProvider. Shutdown flushes and
// stops sdk. A nil sdk is Off.
func NewProvider(sdk *sdktrace.TracerProvider, serviceName string, s Settings) *Provider {
	if sdk == nil {
		return Off()
	}
	return &Provider{tp: redacting{sdk}, sdk: sdk, service: serviceName, propagator: s.Propagator()}
}

// Propagator is the propagator of the boundaries with the outside
// (Settings.Propagator); one that carries nothing when off.
func (p *Provider) Propagator() propagation.TextMapPropagator {
	if !p.Enabled() {
		return propagation.NewCompositeTextMapPropagator()
	}
	return p.propagator
}

// AttrCaller is the attribute of the link from a request's server span to
// the trace context its caller sent.
const AttrCaller = "pix.caller"

// maxCallerTraceState bounds the caller's tracestate a link keeps: the 512
// characters W3C Trace Context asks every participant to propagate. A
// longer one (up to 32 entries of 256 characters each parse) is dropped
// whole: an unauthenticated caller does not put kilobytes in each span.
const maxCallerTraceState = 512

// LinkCaller links the recorded span in ctx, a request's server span, to
// the trace context its caller sent in carrier (a traceparent and its
// tracestate, or what OTEL_PROPAGATORS names instead). The span stays the
// root of a trace of the service's own: a caller, outside the service and
// not yet authenticated, neither joins the trace of another PIX (its trace
// id travels to the PSP and on NATS) nor makes the sampler record past
// OTEL_TRACES_SAMPLER's ratio. The link keeps the caller's trace findable
// from ours. The caller's baggage is never taken: only the span context
// is read, and ctx is left as it is.
func (p *Provider) LinkCaller(ctx context.Context, carrier propagation.TextMapCarrier) {
	span := trace.SpanFromContext(ctx)
	if !p.Enabled() || !span.IsRecording() {
		return
	}
	caller := trace.SpanContextFromContext(p.propagator.Extract(context.Background(), carrier))
	if !caller.IsValid() {
		return
	}
	if len(caller.TraceState().String()) > maxCallerTraceState {
		caller = caller.WithTraceState(trace.TraceState{})
	}
	span.AddLink(trace.Link{SpanContext: caller, Attributes: []attribute.KeyValue{
		attribute.String(AttrCaller, "the trace context the caller sent: linked, not continued")}})
}

// Enabled reports whether spans are recorded: when it is false, nothing
// is instrumented at all.
func (p *Provider) Enabled() bool { return p != nil && p.tp != nil }

// ServiceName is the service.name setup.New recorded spans under ("" when off
// or handed in).
func (p *Provider) ServiceName() string {
	if p == nil {
		return ""
	}
	return p.service
}

// TracerProvider is the provider to instrument with (a no-op one when off).
func (p *Provider) TracerProvider() trace.TracerProvider {
	if !p.Enabled() {
		return noop.NewTracerProvider()
	}
	return p.tp
}

// Tracer is the named tracer of the provider (a no-op one when off).
func (p *Provider) Tracer(name string) trace.Tracer { return p.TracerProvider().Tracer(name) }

// Shutdown exports the spans still buffered and stops the exporters,
// within ctx (the process's shutdown timeout). A provider handed in is
// its owner's to stop.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.sdk == nil {
		return nil
	}
	if err := p.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing shutdown: %w", err)
	}
	return nil
}
