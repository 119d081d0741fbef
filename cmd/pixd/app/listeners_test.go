package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
)

// lockedBuffer collects the service's logs from its goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type answer struct {
	status int
	code   string
	body   string
}

func call(t *testing.T, method, url string, header http.Header) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header = header
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(b, &e) //nolint:errcheck // not every answer is an error
	return answer{res.StatusCode, e.Error.Code, string(b)}
}

// With WEBHOOK_HTTP_ADDR and OPS_HTTP_ADDR, each route class is served on
// its own listener only; the probes tell what is down, never why; and a
// client can't choose the IP our logs record.
func TestRouteClassesHaveTheirOwnListeners(t *testing.T) {
	cfg := config.Default()
	cfg.DatabaseURL = dbtest.URL(t)
	cfg.TemporalAddress = "127.0.0.1:1" // nothing listens: Temporal is down
	cfg.WebhookSignaturesRequired = false
	cfg.AuthRequired = false
	cfg.ShutdownReadyzDelay = 0
	logs := &lockedBuffer{}
	a, err := app.New(context.Background(), cfg, logging.New(logs, "debug"))
	require.NoError(t, err)
	t.Cleanup(a.Close)
	require.NoError(t, a.Migrate(context.Background()))

	listen := func() (net.Listener, string) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		return ln, "http://" + ln.Addr().String()
	}
	mainLn, main := listen()
	webhookLn, webhooks := listen()
	opsLn, ops := listen()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- a.ServeListeners(ctx, app.Listeners{Main: mainLn, Webhooks: webhookLn, Ops: opsLn}) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-served) })
	require.Eventually(t, func() bool {
		res, err := http.Get(ops + "/healthz")
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == http.StatusOK
	}, time.Minute, 20*time.Millisecond)

	noRoute := answer{http.StatusNotFound, "not_found", ""}
	json := http.Header{"Content-Type": {"application/json"}}
	for _, c := range []struct {
		name, method, url string
		want              answer
	}{
		{"webhooks left the main listener", http.MethodPost, main + "/webhooks/pix", noRoute},
		{"probes left the main listener", http.MethodGet, main + "/readyz", noRoute},
		{"metrics left the main listener", http.MethodGet, main + "/metrics", noRoute},
		{"customer routes stay on main", http.MethodGet, main + "/accounts/acc-x", answer{http.StatusNotFound, "account_not_found", ""}},
		{"webhooks are served on theirs", http.MethodPost, webhooks + "/webhooks/pix", answer{http.StatusBadRequest, "invalid_request", ""}},
		{"no customer route on the webhook listener", http.MethodGet, webhooks + "/accounts/acc-x", noRoute},
		{"no admin route on the webhook listener", http.MethodGet, webhooks + "/admin/reconcile", noRoute},
		{"no customer route on the ops listener", http.MethodPost, ops + "/pix", noRoute},
		{"no webhook on the ops listener", http.MethodPost, ops + "/webhooks/pix", noRoute},
		{"metrics on ops", http.MethodGet, ops + "/metrics", answer{http.StatusOK, "", ""}},
		{"the webhooks' document with the webhooks", http.MethodGet, webhooks + "/openapi/webhooks.json", answer{http.StatusOK, "", ""}},
		{"the API's document on main", http.MethodGet, main + "/openapi/pix-api.json", answer{http.StatusOK, "", ""}},
		{"no webhooks' document where no webhook is", http.MethodGet, main + "/openapi/webhooks.json", noRoute},
		{"no API document on the webhook listener", http.MethodGet, webhooks + "/openapi/pix-api.yaml", noRoute},
	} {
		got := call(t, c.method, c.url, json)
		require.Equal(t, c.want.status, got.status, "%s: %s", c.name, got.body)
		require.Equal(t, c.want.code, got.code, "%s: %s", c.name, got.body)
	}

	ready := call(t, http.MethodGet, ops+"/readyz", nil)
	require.Equal(t, http.StatusServiceUnavailable, ready.status)
	require.Contains(t, ready.body, `"temporal":"unreachable"`)
	for _, leak := range []string{"127.0.0.1:1", "dial", "connection refused", "rpc error"} {
		require.NotContains(t, ready.body, leak, "the probe says what is down, the log says why")
	}

	spoofed := http.Header{"X-Forwarded-For": {"203.0.113.66"}, "X-Real-Ip": {"203.0.113.67"}}
	call(t, http.MethodGet, main+"/accounts/acc-spoof", spoofed)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "/accounts/acc-spoof") }, 30*time.Second, 10*time.Millisecond)
	require.NotContains(t, logs.String(), "203.0.113.6", "no proxy is trusted unless TRUSTED_PROXIES names it")
}
