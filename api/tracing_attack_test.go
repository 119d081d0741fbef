package api_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/internal/tracing"
	"github.com/pixbank/pix/internal/tracing/setup"
)

// Found by the attack review of issue 16: the server span is started before
// any authentication, and it took the caller's traceparent as its parent and
// the caller's User-Agent, Host and path as attributes, with no span
// attribute limit in the production provider (tracing.New). An
// unauthenticated client picked the trace (any PIX's trace id it learnt)
// and put ~64 KiB of its own text in each span: 512 such requests make one
// OTLP batch of ~32 MiB, over a collector's request limit, and the
// legitimate spans of that batch are dropped with it. Every request's span
// is now a root, its attributes bounded.
func TestACallerNeitherPlacesNorSizesItsSpan(t *testing.T) {
	var console bytes.Buffer
	p, err := setup.New(t.Context(), tracing.Settings{Exporters: []string{tracing.ExporterConsole}, Console: &console}, "pixd-api")
	require.NoError(t, err)
	router, err := api.NewRouter(api.Deps{
		RequestTimeout: 5 * time.Second, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Tracing: p, BankISPB: "12345678",
	}, api.AllRoutes)
	require.NoError(t, err)
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)

	junk := strings.Repeat("A", 60<<10)
	const victimTrace = "7af973a879d2b1c65425eb0028258e72" // a PIX's trace id (NATS headers, PSP calls carry them)
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/pix/credits/E12345678202611291200000000000001", nil)
	require.NoError(t, err)
	req.Header.Set("User-Agent", junk)
	req.Header.Set("traceparent", "00-"+victimTrace+"-00f067aa0ba902b7-01")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	t.Logf("answer: %d (no credentials)", res.StatusCode)
	require.NoError(t, p.Shutdown(t.Context()))

	out := console.String()
	t.Logf("exported %d bytes for one unauthenticated request", len(out))
	require.NotContains(t, out, victimTrace, "an unauthenticated request's span joins the trace the caller chose")
	require.Less(t, len(out), 8<<10, "an unauthenticated request's span holds the caller's 60 KiB User-Agent")
}

// Found by the attack review of issue 16: with the sampler an operator sets
// to shed load (OTEL_TRACES_SAMPLER=parentbased_traceidratio, here a ratio
// of 0), any unauthenticated caller got every one of its requests recorded
// by sending "sampled" in its traceparent.
func TestACallerCannotOverrideTheSamplingRatio(t *testing.T) {
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
	t.Setenv("OTEL_TRACES_SAMPLER_ARG", "0")
	var console bytes.Buffer
	p, err := setup.New(t.Context(), tracing.Settings{Exporters: []string{tracing.ExporterConsole}, Console: &console}, "pixd-api")
	require.NoError(t, err)
	router, err := api.NewRouter(api.Deps{
		RequestTimeout: 5 * time.Second, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Tracing: p, BankISPB: "12345678",
	}, api.AllRoutes)
	require.NoError(t, err)
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	for _, tp := range []string{"", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/accounts/acc-0001", nil)
		require.NoError(t, err)
		if tp != "" {
			req.Header.Set("traceparent", tp)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
	}
	require.NoError(t, p.Shutdown(t.Context()))
	n := strings.Count(console.String(), `"Name":"GET /accounts/:id"`)
	t.Logf("spans recorded at ratio 0: %d", n)
	require.Zero(t, n, "ratio 0 records nothing, unless the caller says sampled")
}
