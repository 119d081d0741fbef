package setup_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pixbank/pix/internal/buildinfo"
	"github.com/pixbank/pix/internal/tracing"
	"github.com/pixbank/pix/internal/tracing/setup"
)

// Off builds nothing: a no-op provider, nothing recorded, no traceparent.
func TestOffRecordsNothing(t *testing.T) {
	p, err := setup.New(t.Context(), tracing.Settings{}, "pixd-test")
	require.NoError(t, err)
	require.False(t, p.Enabled())
	ctx, span := p.Tracer("test").Start(t.Context(), "nothing")
	require.False(t, span.IsRecording())
	require.Nil(t, tracing.Traceparent(ctx))
	i, err := setup.TemporalInterceptor(p)
	require.NoError(t, err)
	require.Nil(t, i, "no Temporal interceptor")
	require.NoError(t, p.Shutdown(t.Context()))
}

// OTEL_TRACES_EXPORTER=console: contrib's autoexport writes each span as
// JSON on stdout, under the service's name. The test runs itself again
// with the variable set, and reads what that process wrote.
func TestConsoleExporterWritesTheSpansUnderTheServicesName(t *testing.T) {
	if os.Getenv("PIX_TEST_CONSOLE_CHILD") == "1" {
		s, err := tracing.SettingsFrom(os.LookupEnv)
		require.NoError(t, err)
		p, err := setup.New(t.Context(), s, "pixd-test")
		require.NoError(t, err)
		require.True(t, p.Enabled())
		_, span := p.Tracer("test").Start(t.Context(), "a span of the test")
		span.End()
		require.NoError(t, p.Shutdown(t.Context()), "shutdown flushes")
		return
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestConsoleExporterWritesTheSpansUnderTheServicesName$")
	cmd.Env = append(os.Environ(), "PIX_TEST_CONSOLE_CHILD=1", "OTEL_TRACES_EXPORTER=console")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), `"Name":"a span of the test"`)
	require.Contains(t, string(out), `"Value":"pixd-test"`)
}

// What contrib's autoexport cannot build stops the process at its start:
// an exporter it does not know (it takes one name: a list, which this
// service's own selection took before, is refused too), an OTLP protocol
// that does not exist.
func TestAnExporterAutoexportCannotBuildIsRefused(t *testing.T) {
	for _, env := range []map[string]string{
		{"OTEL_TRACES_EXPORTER": "zipkin"},
		{"OTEL_TRACES_EXPORTER": "otlp,console"},
		{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
	} {
		for k, v := range env {
			t.Setenv(k, v)
		}
		s, err := tracing.SettingsFrom(os.LookupEnv)
		require.NoError(t, err)
		_, err = setup.New(t.Context(), s, "pixd-test")
		require.ErrorContains(t, err, "OTEL_TRACES_EXPORTER", env)
	}
}

// Every span is recorded under the build (the version pixd version
// prints, its revision) and the process (a UUID of its own, the same for
// every provider it builds); OTEL_RESOURCE_ATTRIBUTES adds to them and may
// name the instance itself; OTEL_SERVICE_NAME names the service.
func TestTheResourceNamesTheBuildAndTheInstance(t *testing.T) {
	resourceOf := func() map[string]string {
		exported := &keptSpans{}
		p, err := setup.New(t.Context(), tracing.Settings{SpanExporter: exported}, "pixd-test")
		require.NoError(t, err)
		_, span := p.Tracer("test").Start(t.Context(), "a span")
		span.End()
		require.NoError(t, p.Shutdown(t.Context()))
		require.Len(t, exported.spans, 1)
		attrs := map[string]string{}
		for _, kv := range exported.spans[0].Resource().Attributes() {
			attrs[string(kv.Key)] = kv.Value.String()
		}
		return attrs
	}
	build := buildinfo.Read()
	first := resourceOf()
	require.Equal(t, "pixd-test", first["service.name"])
	require.Equal(t, build.Version, first["service.version"])
	require.NotEmpty(t, first["service.version"])
	require.Equal(t, build.Revision, first["vcs.ref.head.revision"])
	_, err := uuid.Parse(first["service.instance.id"])
	require.NoError(t, err, "service.instance.id is a UUID")
	require.Equal(t, first["service.instance.id"], resourceOf()["service.instance.id"], "one instance per process")

	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test,service.instance.id=pixd-api-7f9c")
	t.Setenv("OTEL_SERVICE_NAME", "pixd-blue")
	env := resourceOf()
	require.Equal(t, "test", env["deployment.environment.name"])
	require.Equal(t, "pixd-api-7f9c", env["service.instance.id"])
	require.Equal(t, build.Version, env["service.version"])
	require.Equal(t, "pixd-test", env["service.name"], "the name setup.New is handed (Settings.ServiceName, from OTEL_SERVICE_NAME) wins")
}

// With an OTLP endpoint (and nothing else), spans are exported there over
// OTLP/HTTP when the provider shuts down; OTEL_SERVICE_NAME names them.
func TestOTLPEndpointAloneTurnsTracingOn(t *testing.T) {
	var exports atomic.Int32
	var body atomic.Value
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
			b, _ := io.ReadAll(r.Body)
			body.Store(b)
			exports.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(collector.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL) // read by the exporter itself too
	t.Setenv("OTEL_SERVICE_NAME", "pixd-from-env")
	s, err := tracing.SettingsFrom(func(k string) (string, bool) {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "OTEL_SERVICE_NAME": "pixd-from-env"}[k], true
	})
	require.NoError(t, err)
	p, err := setup.New(t.Context(), s, "pixd-test")
	require.NoError(t, err)
	require.Equal(t, "pixd-from-env", p.ServiceName())
	_, span := p.Tracer("test").Start(t.Context(), "exported")
	span.End()
	require.NoError(t, p.Shutdown(t.Context()))
	require.EqualValues(t, 1, exports.Load())
	require.Contains(t, string(body.Load().([]byte)), "exported")
	require.Contains(t, string(body.Load().([]byte)), "pixd-from-env")
}

// keptSpans keeps what it is handed past its shutdown (tracetest's
// InMemoryExporter forgets it there).
type keptSpans struct{ spans []sdktrace.ReadOnlySpan }

func (k *keptSpans) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	k.spans = append(k.spans, spans...)
	return nil
}

func (k *keptSpans) Shutdown(context.Context) error { return nil }
