package pspsimtests_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/tooling/pspsim"
)

const (
	clientID     = "banco-pix"
	clientSecret = "s3cret:with&odd=chars"
)

// oauthEnv is a simulator with OAuth on, its clock settable.
type oauthEnv struct {
	sim   *pspsim.Simulator
	url   string
	clock *clock
}

func setupOAuth(t *testing.T, o pspsim.OAuthOptions) *oauthEnv {
	t.Helper()
	if o.Clients == nil {
		o.Clients = map[string]string{clientID: clientSecret}
	}
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	sim := pspsim.New(pspsim.Options{Now: clk.Now, OAuth: &o})
	srv := httptest.NewServer(checked(t, "", sim.Handler()))
	t.Cleanup(srv.Close)
	return &oauthEnv{sim: sim, url: srv.URL, clock: clk}
}

// answer is an HTTP answer, headers included.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func call(t *testing.T, req *http.Request) answer {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{resp.StatusCode, resp.Header, b}
}

// tokenRequest asks the token endpoint for a token with form, the client
// authenticated by Basic with id and secret (form-urlencoded first, as
// RFC 6749 §2.3.1 wants) unless id is "".
func tokenRequest(t *testing.T, base, id, secret string, form url.Values) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+pspsim.TokenPath, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if id != "" {
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	}
	return call(t, req)
}

func clientCredentials(scope string) url.Values {
	v := url.Values{"grant_type": {"client_credentials"}}
	if scope != "" {
		v.Set("scope", scope)
	}
	return v
}

type token struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	Scope       string `json:"scope"`
}

func (e *oauthEnv) token(t *testing.T, scope string) token {
	t.Helper()
	a := tokenRequest(t, e.url, clientID, clientSecret, clientCredentials(scope))
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.Equal(t, "no-store", a.header.Get("Cache-Control"))
	var tok token
	require.NoError(t, json.Unmarshal(a.body, &tok))
	return tok
}

// get calls GET path of the API with the bearer token ("" for none).
func (e *oauthEnv) get(t *testing.T, path, bearer string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, e.url+path, nil)
	require.NoError(t, err)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return call(t, req)
}

func oauthErrorCode(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	return e.Error
}

func TestTokenEndpointClientCredentials(t *testing.T) {
	t.Parallel()
	e := setupOAuth(t, pspsim.OAuthOptions{TokenLifetime: time.Minute})
	tok := e.token(t, "")
	require.NotEmpty(t, tok.AccessToken)
	require.Equal(t, "Bearer", tok.TokenType)
	require.EqualValues(t, 60, tok.ExpiresIn)
	require.Equal(t, "pix.read pix.write webhook.read webhook.write", tok.Scope, "no scope asked: every scope granted")
	require.NotEqual(t, tok.AccessToken, e.token(t, "").AccessToken, "a new token each time")

	narrow := e.token(t, "pix.write pix.read")
	require.Equal(t, "pix.read pix.write", narrow.Scope)

	for name, tc := range map[string]struct {
		id, secret string
		form       url.Values
		status     int
		code       string
	}{
		"no client authentication": {"", "", clientCredentials(""), 401, "invalid_client"},
		"a wrong secret":           {clientID, "nope", clientCredentials(""), 401, "invalid_client"},
		"an unknown client":        {"other", clientSecret, clientCredentials(""), 401, "invalid_client"},
		"no grant_type":            {clientID, clientSecret, url.Values{}, 400, "invalid_request"},
		"another grant":            {clientID, clientSecret, url.Values{"grant_type": {"password"}}, 400, "unsupported_grant_type"},
		"a scope not granted":      {clientID, clientSecret, clientCredentials("pix.read cob.write"), 400, "invalid_scope"},
	} {
		t.Run(name, func(t *testing.T) {
			a := tokenRequest(t, e.url, tc.id, tc.secret, tc.form)
			require.Equal(t, tc.status, a.status, "%s", a.body)
			require.Equal(t, tc.code, oauthErrorCode(t, a.body))
			if tc.status == http.StatusUnauthorized {
				require.Equal(t, `Basic realm="pspsim"`, a.header.Get("WWW-Authenticate"))
			}
			require.NotContains(t, string(a.body), clientSecret)
		})
	}

	// The secret in the body instead of Basic is not client
	// authentication here (RFC 6749 §2.3.1: Basic is what the API Pix's
	// PSPs support).
	form := clientCredentials("")
	form.Set("client_id", clientID)
	form.Set("client_secret", clientSecret)
	require.Equal(t, http.StatusUnauthorized, tokenRequest(t, e.url, "", "", form).status)
}

func TestTheAPIChecksBearerTokensAndScopes(t *testing.T) {
	t.Parallel()
	e := setupOAuth(t, pspsim.OAuthOptions{TokenLifetime: time.Minute})
	list := "/pix?inicio=2026-11-29T00:00:00Z&fim=2026-11-30T00:00:00Z"
	read := e.token(t, "pix.read")

	a := e.get(t, list, read.AccessToken)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)

	a = e.get(t, list, "")
	require.Equal(t, http.StatusUnauthorized, a.status)
	require.Equal(t, `Bearer realm="pspsim"`, a.header.Get("WWW-Authenticate"), "RFC 6750 §3.1: no error code without credentials")

	a = e.get(t, list, "not-a-token-it-issued")
	require.Equal(t, http.StatusUnauthorized, a.status)
	require.Contains(t, a.header.Get("WWW-Authenticate"), `error="invalid_token"`)

	// A token without the operation's scope: 403 AcessoNegado.
	webhooks := e.token(t, "webhook.read")
	a = e.get(t, list, webhooks.AccessToken)
	require.Equal(t, http.StatusForbidden, a.status)
	require.Equal(t, pspsim.ProblemAcessoNegado, problem(t, a.body).name)
	require.Contains(t, a.header.Get("WWW-Authenticate"), `error="insufficient_scope", scope="pix.read"`)
	a = e.get(t, "/webhook/maria@example.com", webhooks.AccessToken)
	require.Equal(t, http.StatusNotFound, a.status, "its own scope is enough: %s", a.body)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, e.url+"/pix/"+pixID(1)+"/devolucao/d1", strings.NewReader(`{"valor":"1.00"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+read.AccessToken)
	a = call(t, req)
	require.Equal(t, http.StatusForbidden, a.status, "pix.write is needed to ask for a devolução")
	require.Empty(t, e.sim.Refunds(pixID(1)), "nothing made")

	// Expired, by the simulator's clock.
	e.clock.Advance(time.Minute - time.Millisecond)
	require.Equal(t, http.StatusOK, e.get(t, list, read.AccessToken).status)
	e.clock.Advance(time.Millisecond)
	a = e.get(t, list, read.AccessToken)
	require.Equal(t, http.StatusUnauthorized, a.status)
	require.Contains(t, a.header.Get("WWW-Authenticate"), `error="invalid_token"`)
	require.Equal(t, http.StatusOK, e.get(t, list, e.token(t, "").AccessToken).status, "a new token works")

	// The control routes and the transfer interface: the control routes
	// stay open; the transfers need pix.write / pix.read.
	code, _ := do(t, http.MethodGet, e.url+"/behaviors", "")
	require.Equal(t, http.StatusOK, code)
	code, _ = do(t, http.MethodGet, e.url+"/transfers/"+id(1), "")
	require.Equal(t, http.StatusUnauthorized, code)
}

func TestTheGrantedScopesAreConfigured(t *testing.T) {
	t.Parallel()
	e := setupOAuth(t, pspsim.OAuthOptions{Scopes: []string{pspsim.ScopePixRead}})
	require.Equal(t, "pix.read", e.token(t, "").Scope)
	a := tokenRequest(t, e.url, clientID, clientSecret, clientCredentials("pix.write"))
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, "invalid_scope", oauthErrorCode(t, a.body))
	require.EqualValues(t, pspsim.DefaultTokenLifetime/time.Second, e.token(t, "").ExpiresIn)
	short := setupOAuth(t, pspsim.OAuthOptions{TokenLifetime: 300 * time.Millisecond})
	require.EqualValues(t, 1, short.token(t, "").ExpiresIn, "a lifetime under a second is not announced as expired")

	for name, o := range map[string]pspsim.OAuthOptions{
		"no client":     {Clients: map[string]string{}},
		"empty secret":  {Clients: map[string]string{"a": ""}},
		"unknown scope": {Clients: map[string]string{"a": "b"}, Scopes: []string{"cob.write"}},
	} {
		t.Run(name, func(t *testing.T) {
			sim := pspsim.New(pspsim.Options{OAuth: &o})
			srv := httptest.NewServer(sim.Handler())
			t.Cleanup(srv.Close)
			code, _ := do(t, http.MethodGet, srv.URL+"/pix/"+pixID(1), "")
			require.Equal(t, http.StatusInternalServerError, code, "never served without the credentials it was meant to check")
		})
	}
}

func TestClientSecretRotation(t *testing.T) {
	t.Parallel()
	e := setupOAuth(t, pspsim.OAuthOptions{})
	before := e.token(t, "")
	code, body := do(t, http.MethodPut, e.url+"/sim/oauth-clients/"+clientID, `{"secret":"the-new-one"}`)
	require.Equal(t, http.StatusNoContent, code, "%s", body)
	a := tokenRequest(t, e.url, clientID, clientSecret, clientCredentials(""))
	require.Equal(t, http.StatusUnauthorized, a.status, "the old secret is refused")
	require.Equal(t, "invalid_client", oauthErrorCode(t, a.body))
	a = tokenRequest(t, e.url, clientID, "the-new-one", clientCredentials(""))
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, http.StatusOK, e.get(t, "/pix?inicio=2026-11-29T00:00:00Z&fim=2026-11-29T00:00:00Z", before.AccessToken).status,
		"a token issued before stays valid until it expires")

	code, _ = do(t, http.MethodPut, e.url+"/sim/oauth-clients/"+clientID, `{"secret":"`+clientSecret+`","revoke_tokens":true}`)
	require.Equal(t, http.StatusNoContent, code)
	require.Equal(t, http.StatusUnauthorized, e.get(t, "/pix?inicio=2026-11-29T00:00:00Z&fim=2026-11-29T00:00:00Z", before.AccessToken).status,
		"revoked")
	e.token(t, "")

	code, _ = do(t, http.MethodPut, e.url+"/sim/oauth-clients/"+clientID, `{"secret":""}`)
	require.Equal(t, http.StatusBadRequest, code)
	require.Error(t, pspsim.New(pspsim.Options{}).SetClientSecret("a", "b", false), "no OAuth, no client")
}

func TestTokenEndpointDown(t *testing.T) {
	t.Parallel()
	e := setupOAuth(t, pspsim.OAuthOptions{})
	tok := e.token(t, "")

	code, body := do(t, http.MethodPut, e.url+"/sim/token-endpoint", `{"mode":"unavailable","for":"30s"}`)
	require.Equal(t, http.StatusNoContent, code, "%s", body)
	a := tokenRequest(t, e.url, clientID, clientSecret, clientCredentials(""))
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	require.Equal(t, "temporarily_unavailable", oauthErrorCode(t, a.body))
	require.Equal(t, http.StatusOK, e.get(t, "/pix?inicio=2026-11-29T00:00:00Z&fim=2026-11-29T00:00:00Z", tok.AccessToken).status,
		"the API still takes the tokens it issued")
	code, body = do(t, http.MethodGet, e.url+"/sim/faults", "")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"token_endpoint":{"mode":"unavailable","until":"2026-11-29T12:00:30Z"},"webhooks_dropped_until":null,"list_page_size":null}`, string(body))

	e.clock.Advance(30 * time.Second)
	e.token(t, "")

	// Cut: the connection closes without an answer, until cleared.
	require.NoError(t, e.sim.SetTokenEndpointFault(pspsim.TokenEndpointFault{Mode: pspsim.TokenEndpointCut}))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+pspsim.TokenPath, strings.NewReader(clientCredentials("").Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(clientID, url.QueryEscape(clientSecret))
	_, err = (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	require.Error(t, err, "no answer")
	e.clock.Advance(time.Hour)
	_, err = (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	require.Error(t, err, "until cleared")
	code, _ = do(t, http.MethodDelete, e.url+"/sim/token-endpoint", "")
	require.Equal(t, http.StatusNoContent, code)
	e.token(t, "")

	code, _ = do(t, http.MethodPut, e.url+"/sim/token-endpoint", `{"mode":"slow"}`)
	require.Equal(t, http.StatusBadRequest, code)
	require.Error(t, pspsim.New(pspsim.Options{}).SetTokenEndpointFault(pspsim.TokenEndpointFault{Mode: pspsim.TokenEndpointCut}),
		"no OAuth, no token endpoint")
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

func urlEscape(s string) string { return url.QueryEscape(s) }
