package tracing_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tracing"
)

func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func TestSettingsAreOffUnlessAnExporterIsAskedFor(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		// Naming the service, or the protocol, asks for no exporter.
		{"OTEL_SERVICE_NAME": "pixd", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
		{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"},
	} {
		s, err := tracing.SettingsFrom(lookup(env))
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
			tracing.Settings{Exporters: []string{"otlp"}, Protocol: "http/protobuf"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://jaeger:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_SERVICE_NAME": "api-blue"},
			tracing.Settings{Exporters: []string{"otlp"}, Protocol: "grpc", ServiceName: "api-blue"}},
		{map[string]string{"OTEL_TRACES_EXPORTER": "console"},
			tracing.Settings{Exporters: []string{"console"}, Protocol: "http/protobuf"}},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp, console", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
			tracing.Settings{Exporters: []string{"otlp", "console"}, Protocol: "grpc"}},
	} {
		s, err := tracing.SettingsFrom(lookup(tc.env))
		require.NoError(t, err, tc.env)
		require.Equal(t, tc.want, s, tc.env)
	}
}

func TestSettingsRefuseWhatTheyCannotDo(t *testing.T) {
	for _, env := range []map[string]string{
		{"OTEL_TRACES_EXPORTER": "zipkin"},
		{"OTEL_TRACES_EXPORTER": "otlp,none"},
		{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
	} {
		_, err := tracing.SettingsFrom(lookup(env))
		require.Error(t, err, env)
	}
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
