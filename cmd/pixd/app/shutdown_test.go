package app_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
)

// On shutdown /readyz turns 503 first, while requests are still served, so
// that a load balancer stops sending before the server stops.
func TestReadyzTurns503BeforeTheServerStops(t *testing.T) {
	cfg := config.Default()
	cfg.DatabaseURL = dbtest.URL(t)
	cfg.TemporalAddress = "127.0.0.1:1"
	cfg.WebhookSignaturesRequired = false
	cfg.AuthRequired = false
	cfg.ShutdownReadyzDelay = 2 * time.Second
	a, err := app.New(context.Background(), cfg, logging.New(io.Discard, "error"))
	require.NoError(t, err)
	t.Cleanup(a.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- a.ServeAPI(ctx, ln) }()
	status := func(path string) int {
		res, err := http.Get(base + path)
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
	require.Eventually(t, func() bool { return status("/healthz") == http.StatusOK }, time.Minute, 20*time.Millisecond)
	// Temporal is unreachable here, so /readyz is 503 already; what
	// matters is that the draining answer comes while the server serves.

	began := time.Now()
	cancel()
	require.Eventually(t, func() bool {
		res, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), `"draining":true`)
	}, time.Second, 20*time.Millisecond, "/readyz says draining")
	require.Equal(t, http.StatusOK, status("/healthz"), "requests are still served while draining")
	require.NoError(t, <-served)
	require.GreaterOrEqual(t, time.Since(began), 2*time.Second, "the server stopped only after the delay")
	require.Zero(t, status("/healthz"), "then it stops taking connections")
}
