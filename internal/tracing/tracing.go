package tracing

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The exporters OTEL_TRACES_EXPORTER may name, and the OTLP protocols.
const (
	ExporterOTLP    = "otlp"
	ExporterConsole = "console"
	ExporterNone    = "none"

	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Settings are what the OTEL_* variables say about tracing. The OTLP
// exporter reads the rest of its OTEL_EXPORTER_OTLP_* variables (endpoint,
// headers, timeout, certificates, compression) itself, and the SDK its
// OTEL_TRACES_SAMPLER*, OTEL_BSP_* and OTEL_RESOURCE_ATTRIBUTES.
type Settings struct {
	// Exporters are the span exporters (ExporterOTLP, ExporterConsole);
	// none: tracing is off.
	Exporters []string
	// Protocol is the OTLP exporter's (ProtocolHTTP or ProtocolGRPC).
	Protocol string
	// ServiceName is OTEL_SERVICE_NAME; "" takes the process's default.
	ServiceName string
	// Console is where the console exporter writes (os.Stdout when nil).
	Console io.Writer
}

// Enabled reports whether the settings ask for an exporter.
func (s Settings) Enabled() bool { return len(s.Exporters) > 0 }

// SettingsFrom reads the tracing settings through lookup (os.LookupEnv in
// production). Tracing is off unless something asks for an exporter:
// OTEL_TRACES_EXPORTER naming one, or, with it unset, an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). The
// specification's default exporter, OTLP to localhost, would have every
// process without a collector dial for nothing; so unset means off here.
// OTEL_SDK_DISABLED=true turns it off whatever else is set.
func SettingsFrom(lookup func(string) (string, bool)) (Settings, error) {
	get := func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}
	var s Settings
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") {
		return Settings{}, nil
	}
	if names := get("OTEL_TRACES_EXPORTER"); names != "" {
		none := false
		for _, name := range strings.Split(names, ",") {
			switch name = strings.ToLower(strings.TrimSpace(name)); name {
			case ExporterOTLP, ExporterConsole:
				if !slices.Contains(s.Exporters, name) {
					s.Exporters = append(s.Exporters, name)
				}
			case ExporterNone:
				none = true
			default:
				return Settings{}, fmt.Errorf("OTEL_TRACES_EXPORTER: %q is not otlp, console or none", name)
			}
		}
		if none && len(s.Exporters) > 0 {
			return Settings{}, fmt.Errorf("OTEL_TRACES_EXPORTER: %q names none beside an exporter", names)
		}
	} else if get("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		s.Exporters = []string{ExporterOTLP}
	}
	if !s.Enabled() {
		return Settings{}, nil // the zero Settings: off
	}
	s.ServiceName = get("OTEL_SERVICE_NAME")
	s.Protocol = get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if s.Protocol == "" {
		s.Protocol = get("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch s.Protocol {
	case "":
		s.Protocol = ProtocolHTTP
	case ProtocolHTTP, ProtocolGRPC:
	default:
		return Settings{}, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: %q is not http/protobuf or grpc", s.Protocol)
	}
	return s, nil
}

// propagator carries the trace context (W3C tracecontext) and baggage
// across every boundary: HTTP requests, Temporal headers, NATS headers.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Propagator is the process's propagator: W3C tracecontext and baggage.
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
}

// Off is tracing off: no exporter, no span.
func Off() *Provider { return nil }

// FromTracerProvider traces into tp, which the caller owns (and shuts
// down): a test's in-memory recorder, say. Errors are redacted as with
// setup.New.
func FromTracerProvider(tp trace.TracerProvider) *Provider {
	return &Provider{tp: redacting{tp}}
}

// NewProvider is the Provider of sdk, a provider package setup built, its
// spans recorded under service.name serviceName; errors are redacted as
// with FromTracerProvider. Shutdown flushes and stops sdk. A nil sdk is
// Off.
func NewProvider(sdk *sdktrace.TracerProvider, serviceName string) *Provider {
	if sdk == nil {
		return Off()
	}
	return &Provider{tp: redacting{sdk}, sdk: sdk, service: serviceName}
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
