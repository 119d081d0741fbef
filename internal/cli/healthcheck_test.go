package cli_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/cli"
)

func TestProbe(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	t.Cleanup(srv.Close)

	require.NoError(t, cli.Probe(context.Background(), srv.URL+"/readyz"))
	status = http.StatusServiceUnavailable
	require.ErrorContains(t, cli.Probe(context.Background(), srv.URL+"/readyz"), "503 Service Unavailable")
	status = http.StatusMovedPermanently // a redirect without a Location is no answer
	require.Error(t, cli.Probe(context.Background(), srv.URL+"/readyz"))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String() + "/healthz"
	require.NoError(t, ln.Close())
	require.Error(t, cli.Probe(context.Background(), closed), "nothing listens")
	require.Error(t, cli.Probe(context.Background(), "not a url"))
}

// A server that accepts the connection and never answers fails the probe,
// at its timeout (ProbeTimeout for Probe), rather than holding the container runtime's check.
func TestProbeGivesUpOnAHungServer(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hang }))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hang) })
	require.ErrorIs(t, cli.ProbeWithin(context.Background(), srv.URL, 50*time.Millisecond), context.DeadlineExceeded)
}
