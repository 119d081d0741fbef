package api_test

import (
	"bytes"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/codec"
)

// reattackCodecRouter builds the router as ServeListeners does: the codec
// server behind AuthorizeAdmin, allowed origin http://127.0.0.1:8233.
func reattackCodecRouter(t *testing.T, routes api.Routes, open bool) *httptest.Server {
	t.Helper()
	ring, err := codec.ParseKeyRing("k1=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, codec.KeySize)))
	require.NoError(t, err)
	deps := api.Deps{
		RequestTimeout: 5 * time.Second, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		AdminToken: reattackAdminToken,
		Tokens: fakeTokens{
			"tok-customer": {Subject: "c", Scopes: []string{auth.ScopeRead, auth.ScopeWrite}, Accounts: []string{"acc-a"}},
			"tok-ops":      {Subject: "ops", Scopes: []string{auth.ScopeAdmin}},
		},
		OpenCustomerRoutes: open,
	}
	authorizeAdmin := api.AuthorizeAdmin(deps)
	deps.Codec = codec.NewServer(codec.New(ring), codec.ServerOptions{
		AllowedOrigins: []string{"http://127.0.0.1:8233"},
		Authorize:      func(r *http.Request) bool { return authorizeAdmin(r) == nil },
	})
	router, err := api.NewRouter(deps, routes)
	require.NoError(t, err)
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	return srv
}

func reattackCodecCall(t *testing.T, method, url, tok, origin, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

// Who may decode: operators only; a customer's token, none, a bad one, an
// admin token from another origin, and the other listeners are refused.
func TestReattackCodecAccess(t *testing.T) {
	plain := `{"payloads":[{"metadata":{"encoding":"` + base64.StdEncoding.EncodeToString([]byte("json/plain")) +
		`"},"data":"` + base64.StdEncoding.EncodeToString([]byte(`{"cpf":"12345678909"}`)) + `"}]}`
	for _, open := range []bool{false, true} {
		srv := reattackCodecRouter(t, api.AllRoutes, open)
		st, _, enc := reattackCodecCall(t, http.MethodPost, srv.URL+"/codec/encode", reattackAdminToken, "", plain)
		require.Equal(t, http.StatusOK, st, enc)
		require.NotContains(t, enc, base64.StdEncoding.EncodeToString([]byte(`{"cpf":"12345678909"}`)))

		st, _, dec := reattackCodecCall(t, http.MethodPost, srv.URL+"/codec/decode", "tok-ops", "", enc)
		require.Equal(t, http.StatusOK, st, dec)
		require.Contains(t, dec, base64.StdEncoding.EncodeToString([]byte(`{"cpf":"12345678909"}`)))

		for _, c := range []struct{ name, path, tok, origin string }{
			{"no token", "/codec/decode", "", ""},
			{"customer token", "/codec/decode", "tok-customer", ""},
			{"bad token", "/codec/decode", "nope", ""},
			{"admin token as a prefix", "/codec/decode", reattackAdminToken[:10], ""},
			{"customer, ns-templated path", "/codec/default/decode", "tok-customer", ""},
			{"customer, encode", "/codec/encode", "tok-customer", ""},
		} {
			st, h, body := reattackCodecCall(t, http.MethodPost, srv.URL+c.path, c.tok, c.origin, enc)
			require.Equal(t, http.StatusUnauthorized, st, "open=%v %s: %s", open, c.name, body)
			require.NotContains(t, body, "12345678909")
			require.Empty(t, h.Get("Access-Control-Allow-Origin"))
		}
		// Another origin, or null, with the admin token: refused, nothing reflected.
		for _, origin := range []string{"https://evil.example", "null", "http://127.0.0.1:8233.evil.example", "HTTP://127.0.0.1:8233", "http://127.0.0.1:8233/"} {
			st, h, body := reattackCodecCall(t, http.MethodPost, srv.URL+"/codec/decode", reattackAdminToken, origin, enc)
			require.Equal(t, http.StatusForbidden, st, "origin %q: %s", origin, body)
			require.Empty(t, h.Get("Access-Control-Allow-Origin"), origin)
			st, h, body = reattackCodecCall(t, http.MethodOptions, srv.URL+"/codec/decode", "", origin, "")
			require.Equal(t, http.StatusForbidden, st, "preflight origin %q: %s", origin, body)
			require.Empty(t, h.Get("Access-Control-Allow-Origin"), origin)
		}
		// The allowed origin without credentials: 401, readable to the UI.
		st, h, body := reattackCodecCall(t, http.MethodPost, srv.URL+"/codec/decode", "", "http://127.0.0.1:8233", enc)
		require.Equal(t, http.StatusUnauthorized, st, body)
		require.Equal(t, "http://127.0.0.1:8233", h.Get("Access-Control-Allow-Origin"))
	}
	// Not on the webhook or ops listeners.
	for _, routes := range []api.Routes{api.WebhookRoutes, api.OpsRoutes, api.WebhookRoutes | api.OpsRoutes} {
		srv := reattackCodecRouter(t, routes, false)
		for _, p := range []string{"/codec/decode", "/codec/encode", "/codec/x/decode"} {
			st, _, body := reattackCodecCall(t, http.MethodPost, srv.URL+p, reattackAdminToken, "", `{"payloads":[]}`)
			require.Equal(t, http.StatusNotFound, st, "routes %b %s: %s", routes, p, body)
		}
	}
}
