package api_test

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
)

// An unauthenticated caller that sends a body slower than HTTP_READ_TIMEOUT
// (default 5 s, with HTTP_WRITE_TIMEOUT 10 s) is answered 400 with the
// network library's error text: the server's own address and port.
func TestAttackSlowBodyLeaksServerAddress(t *testing.T) {
	router, err := api.NewRouter(api.Deps{
		Stores: api.StoresOf(dbtest.New(t)), RequestTimeout: 5 * time.Second, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		AdminToken: adminToken, Keys: db.KeyPolicy{LockFor: 30 * time.Second, KeepFor: time.Hour},
		RequireSignatures: false,
	}, api.AllRoutes)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(router)
	srv.Config.ReadTimeout = 300 * time.Millisecond // HTTP_READ_TIMEOUT, scaled down
	srv.Config.WriteTimeout = 5 * time.Second       // HTTP_WRITE_TIMEOUT
	srv.Start()
	t.Cleanup(srv.Close)

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /webhooks/pix HTTP/1.1\r\nHost: pix\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"end_to_end_id\":")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(3*time.Second)))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	t.Logf("%d %s", res.StatusCode, body)
	require.NotContains(t, string(body), srv.Listener.Addr().String(), "the answer names the server's socket address")
	require.False(t, strings.Contains(string(body), "i/o timeout") || strings.Contains(string(body), "read tcp"), "library error text in the answer: %s", body)
}
