package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/cli"
)

// Found by the attack review of issue 16: pixctl refund made a new random
// Idempotency-Key when -key was not given, and printed it only on success.
// When the answer of the POST is lost after the API debited the devolução
// (connection cut, timeout, a gateway's 5xx), pixctl exits 3 ("could not
// ask": the documented invitation to ask again); the operator's retry, the
// same command again, carried a new key: a second devolução debited. The
// key is now derived from the request and printed before it is sent.
func TestRefundAskedAgainAfterALostAnswerIsTheSameRequest(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var keys []string // one debit per distinct key, as the API does
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/refunds") {
			t.Errorf("unexpected %s %s", r.Method, r.URL)
			return
		}
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		// The debit committed; the answer is lost on the way back.
		conn, _, err := w.(http.Hijacker).Hijack()
		require.NoError(t, err)
		conn.Close()
	}))
	defer api.Close()
	getenv := env("PIX_API_URL", api.URL, "PIX_TOKEN", "customer-token")
	args := []string{"refund", "-e2e", "E12345678202611291200000000000A1", "-amount", "1000", "-account", "acc-0001"}

	first := pixctl(t, getenv, args...)
	first.requireStatus(t, cli.ExitUnavailable)
	mu.Lock()
	key := keys[0]
	mu.Unlock()
	printed := strings.Contains(first.stdout+first.stderr, key)

	// The operator does what exit 3 says: ask again.
	second := pixctl(t, getenv, args...)
	second.requireStatus(t, cli.ExitUnavailable)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, keys, 2)
	t.Logf("first try's key %s, the retry's %s; the first answer printed: %q", keys[0], keys[1], first.stderr)
	require.True(t, printed, "a lost answer must name the Idempotency-Key it was sent with, or the retry debits again")
	require.Equal(t, keys[0], keys[1], "the retry is a new devolução: a second debit")
}

// Found by the attack review of issue 16: pixctl reconcile pointed at a
// listener without the admin routes (the webhook or the operations
// listener, a gateway's 404), or at something answering 200 {}, exited 1,
// the status that says "the books do not balance", though it never got the
// books' check. Both could not ask (3).
func TestReconcileOnTheWrongListenerCouldNotAsk(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":"not_found","message":"no route GET /admin/reconcile"}}`))
	}))
	defer api.Close()
	r := pixctl(t, env("PIX_API_URL", api.URL, "ADMIN_TOKEN", "an-admin-token-of-32-characters!"), "reconcile")
	r.requireStatus(t, cli.ExitUnavailable)

	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer empty.Close()
	r = pixctl(t, env("PIX_API_URL", empty.URL, "ADMIN_TOKEN", "an-admin-token-of-32-characters!"), "reconcile")
	r.requireStatus(t, cli.ExitUnavailable)
	require.NotContains(t, r.stdout, "UNBALANCED")
}
