package tracing_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tracing"
)

func TestSettingsAreOffUnlessAnExporterIsAskedFor(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		// Naming the service, or the protocol, asks for no exporter.
		{"OTEL_SERVICE_NAME": "pixd", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
		{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"},
	} {
		s, err := tracing.SettingsFrom(config.LookupIn(env))
		require.NoError(t, err, env)
		require.False(t, s.Enabled(), env)
		require.Equal(t, tracing.Settings{}, s, "off is the zero Settings, as config.Default has it")
	}
}

func TestSettingsName(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want tracing.Settings
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"},
			tracing.Settings{Exporter: "otlp"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://jaeger:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_SERVICE_NAME": "api-blue"},
			tracing.Settings{Exporter: "otlp", ServiceName: "api-blue"}},
		{map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_PROPAGATORS": "tracecontext, b3"},
			tracing.Settings{Exporter: "console", Propagators: []string{"tracecontext", "b3"}}},
		// What autoexport does not know is refused by setup.New, at the start.
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"},
			tracing.Settings{Exporter: "zipkin"}},
	} {
		s, err := tracing.SettingsFrom(config.LookupIn(tc.env))
		require.NoError(t, err, tc.env)
		require.Equal(t, tc.want, s, tc.env)
	}
}

func TestSettingsRefuseAPropagatorAutopropDoesNotKnow(t *testing.T) {
	_, err := tracing.SettingsFrom(config.LookupIn(map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_PROPAGATORS": "tracecontext,w3c"}))
	require.ErrorContains(t, err, "OTEL_PROPAGATORS")
}

func recorded(t *testing.T) (*tracing.Provider, *tracetest.SpanRecorder) {
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tracing.FromTracerProvider(tp), recorder
}

// A row's traceparent names the span it was written in; a context built
// from it continues that trace.
func TestTraceparentRoundTrip(t *testing.T) {
	p, recorder := recorded(t)
	ctx, request := p.Tracer("test").Start(t.Context(), "request")
	tp := tracing.Traceparent(ctx)
	require.NotNil(t, tp)
	sc := request.SpanContext()
	require.Equal(t, fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID()), *tp)
	request.End()

	_, later := p.Tracer("test").Start(tracing.WithTraceparent(context.Background(), tp), "later")
	later.End()
	ended := recorder.Ended()
	require.Len(t, ended, 2)
	require.Equal(t, sc.TraceID(), ended[1].SpanContext().TraceID())
	require.Equal(t, sc.SpanID(), ended[1].Parent().SpanID())
	require.True(t, ended[1].Parent().IsRemote())

	require.Equal(t, context.Background(), tracing.WithTraceparent(context.Background(), nil), "no traceparent: the context as it is")
	garbage := "not a traceparent"
	require.False(t, trace.SpanContextFromContext(tracing.WithTraceparent(context.Background(), &garbage)).IsValid())
}

// typedError has a type as Temporal's application errors do (package
// setup's TestErrorTypeOfTemporalErrors holds ErrorType to the SDK's own).
type typedError struct{ text, typ string }

func (e typedError) Error() string      { return e.text }
func (e typedError) Type() string       { return e.typ }
func (e typedError) NonRetryable() bool { return false }

// An error is recorded by its type, never its text, whichever
// instrumentation records it.
func TestErrorsAreRecordedByTypeOnly(t *testing.T) {
	p, recorder := recorded(t)
	for _, err := range []error{
		typedError{"account acc-1 has no PIX key maria@example.com", "PixKeyNotFound"},
		fmt.Errorf("credit: %w", fmt.Errorf("%w: acc-1", pix.ErrAccountNotFound)),
		fmt.Errorf("psp said: %w", errors.New("secret answer of the PSP")),
	} {
		_, span := p.Tracer("test").Start(t.Context(), "failing")
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.End()
	}
	ended := recorder.Ended()
	require.Len(t, ended, 3)
	var types []string
	for _, s := range ended {
		require.Equal(t, codes.Error, s.Status().Code)
		require.Len(t, s.Events(), 1)
		ev := s.Events()[0]
		require.Equal(t, "exception", ev.Name)
		require.Len(t, ev.Attributes, 1, "exception.type alone")
		types = append(types, ev.Attributes[0].Value.AsString())
		require.Equal(t, ev.Attributes[0].Value.AsString(), s.Status().Description)
		for _, secret := range []string{"acc-1", "maria", "secret"} {
			require.NotContains(t, fmt.Sprint(s.Events(), s.Status()), secret)
		}
	}
	require.Equal(t, []string{"PixKeyNotFound", pix.KindOf(pix.ErrAccountNotFound).Code, "*errors.errorString"}, types)
}

// With tracing off the webhook's path pays nothing for it: the row's
// traceparent is a nil pointer (a NULL), found without an allocation.
func TestOffCostsNoAllocation(t *testing.T) {
	type requestKey struct{}
	ctx := context.WithValue(t.Context(), requestKey{}, "a request's context")
	allocs := testing.AllocsPerRun(100, func() {
		if tracing.Traceparent(ctx) != nil {
			t.Fatal("a traceparent without a span")
		}
		tracing.SetEndToEndID(ctx, "E1")
		_ = tracing.WithTraceparent(ctx, nil)
	})
	require.Zero(t, allocs)
}

// A caller's trace context becomes a link of the request's span, never
// its parent, in the formats OTEL_PROPAGATORS names; the caller's baggage
// is not taken, and a tracestate over W3C's 512 characters is not kept.
func TestLinkCallerLinksWhatOTELPropagatorsReads(t *testing.T) {
	const (
		callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		callerSpan  = "00f067aa0ba902b7"
	)
	headers := map[string]string{
		"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01",
		"tracestate":  "vendor=opaque",
		"baggage":     "account=acc-1",
		"b3":          callerTrace + "-" + callerSpan + "-1",
	}
	for _, tc := range []struct {
		propagators string
		headers     map[string]string
		linked      bool
	}{
		{"", headers, true}, // the default: tracecontext, baggage
		{"tracecontext", headers, true},
		{"b3", headers, true},
		{"b3", map[string]string{"traceparent": headers["traceparent"]}, false},
		{"none", headers, false},
		{"", map[string]string{"traceparent": "00-garbage"}, false},
	} {
		env := map[string]string{"OTEL_TRACES_EXPORTER": "console"}
		if tc.propagators != "" {
			env["OTEL_PROPAGATORS"] = tc.propagators
		}
		s, err := tracing.SettingsFrom(config.LookupIn(env))
		require.NoError(t, err)
		recorder := tracetest.NewSpanRecorder()
		p := tracing.NewProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder)), "pixd-test", s)

		ctx, span := p.Tracer("test").Start(t.Context(), "POST /webhooks/pix")
		p.LinkCaller(ctx, propagation.MapCarrier(tc.headers))
		span.End()
		require.NoError(t, p.Shutdown(t.Context()))

		ended := recorder.Ended()
		require.Len(t, ended, 1)
		require.False(t, ended[0].Parent().IsValid(), "the caller is never the parent")
		require.NotEqual(t, callerTrace, ended[0].SpanContext().TraceID().String())
		if !tc.linked {
			require.Empty(t, ended[0].Links(), "OTEL_PROPAGATORS=%q, headers %v", tc.propagators, tc.headers)
			continue
		}
		require.Len(t, ended[0].Links(), 1, tc.propagators)
		link := ended[0].Links()[0]
		require.Equal(t, callerTrace, link.SpanContext.TraceID().String())
		require.Equal(t, callerSpan, link.SpanContext.SpanID().String())
		require.True(t, link.SpanContext.IsRemote())
		require.Len(t, link.Attributes, 1)
		require.Equal(t, tracing.AttrCaller, string(link.Attributes[0].Key))
		if tc.propagators != "b3" {
			require.Equal(t, "vendor=opaque", link.SpanContext.TraceState().String())
		}
		require.NotContains(t, fmt.Sprint(ended[0].Attributes(), link), "acc-1", "the caller's baggage is taken")
	}
}

func TestLinkCallerDropsATraceStateOverW3CsBound(t *testing.T) {
	p, recorder := recorded(t)
	var entries []string
	for i := range 30 {
		entries = append(entries, fmt.Sprintf("v%d=%s", i, strings.Repeat("x", 200)))
	}
	ctx, span := p.Tracer("test").Start(t.Context(), "request")
	p.LinkCaller(ctx, propagation.MapCarrier{
		"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"tracestate":  strings.Join(entries, ","),
	})
	span.End()
	links := recorder.Ended()[0].Links()
	require.Len(t, links, 1)
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", links[0].SpanContext.TraceID().String())
	require.Zero(t, links[0].SpanContext.TraceState().Len(), "6 KiB of the caller's tracestate kept in the span")
}

// Off, nothing is read.
func TestLinkCallerOffDoesNothing(t *testing.T) {
	tracing.Off().LinkCaller(t.Context(), propagation.MapCarrier{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	require.Empty(t, tracing.Off().Propagator().Fields(), "off, nothing is propagated")
}
