package connlimit_test

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/connlimit"
)

// serveTracked serves "ok" on a listener of l's, its server telling l
// which connections are idle (ConnState), as pixd's servers do.
func serveTracked(t *testing.T, l *connlimit.Limiter) string {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }),
		ReadHeaderTimeout: time.Second, IdleTimeout: time.Minute, ConnState: l.ConnState}
	t.Cleanup(func() { _ = srv.Close() })
	go func() { _ = srv.Serve(l.Listen(raw, nil)) }()
	return "http://" + raw.Addr().String()
}

func get(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	res, err := c.Get(url)
	require.NoError(t, err)
	_, _ = io.ReadAll(res.Body)
	res.Body.Close()
	return res.StatusCode
}

// Idle keep-alive connections can't hold the places: at the cap, one of
// them is closed and the newcomer served (the attack: the cap's worth of
// connections, a request each, left open for the idle timeout).
func TestAnIdleConnectionMakesRoomAtTheCap(t *testing.T) {
	l := connlimit.New(2, []byte(answer), nil)
	url := serveTracked(t, l)
	holders := []*http.Client{{Transport: &http.Transport{}}, {Transport: &http.Transport{}}}
	for _, h := range holders {
		require.Equal(t, http.StatusOK, get(t, h, url))
	}
	require.EqualValues(t, 2, l.Open())
	require.Eventually(t, func() bool { return l.IdleConns() == 2 }, 5*time.Second, time.Millisecond,
		"the holders' connections marked idle")

	newcomer := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	for range 5 {
		require.Equal(t, http.StatusOK, get(t, newcomer, url), "served, an idle connection closed for it")
		// The newcomer's connection keeps its place until the server has
		// closed it, which can be after the client read the answer: wait
		// for that, or the next newcomer would find two connections that
		// are closing, neither idle, and be refused rightly (seen in a
		// clean clone on a loaded machine).
		require.Eventually(t, func() bool { return l.Open() <= 1 }, 5*time.Second, time.Millisecond,
			"the newcomer's connection released")
	}
	require.LessOrEqual(t, l.Open(), int64(2))
}

// Each listener has its own places: connections held on one (the customer
// API, reachable by anyone) don't refuse those of another (the PSPs'
// webhook listener).
func TestEachListenerHasItsOwnPlaces(t *testing.T) {
	l := connlimit.New(1, []byte(answer), nil)
	api, webhooks := serveTracked(t, l), serveTracked(t, l)
	// The API's one place held by a connection that sent nothing yet
	// (not idle: it can't be closed to make room).
	held, err := net.Dial("tcp", api[len("http://"):])
	require.NoError(t, err)
	t.Cleanup(func() { _ = held.Close() })
	require.Eventually(t, func() bool { return l.Open() == 1 }, 5*time.Second, 10*time.Millisecond)

	refused := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	require.Equal(t, http.StatusServiceUnavailable, get(t, refused, api), "the API is at its cap")
	require.Equal(t, http.StatusOK, get(t, refused, webhooks), "the webhook listener's place is its own")
}
