package setup_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

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

func TestConsoleExporterWritesTheSpansUnderTheServicesName(t *testing.T) {
	var out bytes.Buffer
	p, err := setup.New(t.Context(), tracing.Settings{Exporters: []string{"console"}, Console: &out}, "pixd-test")
	require.NoError(t, err)
	require.True(t, p.Enabled())
	_, span := p.Tracer("test").Start(t.Context(), "a span of the test")
	span.End()
	require.NoError(t, p.Shutdown(t.Context()), "shutdown flushes")
	require.Contains(t, out.String(), `"Name":"a span of the test"`)
	require.Contains(t, out.String(), `"Value":"pixd-test"`)
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
