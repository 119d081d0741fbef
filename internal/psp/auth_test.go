package psp_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/psp/psptest"
	"github.com/pixbank/pix/internal/tooling/testpki"
)

const (
	clientID     = psptest.ClientID
	clientSecret = psptest.ClientSecret
	apiBase      = psptest.APIBase
)

// TestClientCredentials: the token request is RFC 6749 §4.4 with the
// client authenticated by HTTP Basic and the scopes asked, over mutual TLS;
// the API call carries the token, over mutual TLS, under the base's path.
func TestClientCredentials(t *testing.T) {
	f := psptest.NewFakePSP(t)
	res, err := f.Client(t).Status(t.Context(), e2e)
	require.NoError(t, err)
	require.Equal(t, psp.StatusSettled, res.Status)

	tokens := f.SeenTokens()
	require.Len(t, tokens, 1)
	tr := tokens[0]
	req := &http.Request{Header: http.Header{"Authorization": {tr.Authorization}}}
	id, secret, ok := req.BasicAuth()
	require.True(t, ok, "client authentication by HTTP Basic: %q", tr.Authorization)
	require.Equal(t, clientID, id)
	require.Equal(t, clientSecret, secret)
	require.Equal(t, "client_credentials", tr.Form.Get("grant_type"))
	require.Equal(t, "pix.read pix.write webhook.read webhook.write", tr.Form.Get("scope"))
	require.Empty(t, tr.Form.Get("client_secret"), "the secret is in the header only")
	require.Equal(t, "bank.example", tr.ClientCN, "our certificate, presented to the token endpoint")

	calls := f.SeenCalls()
	require.Len(t, calls, 1)
	require.Equal(t, "Bearer tok1", calls[0].Authorization)
	require.Equal(t, "bank.example", calls[0].ClientCN, "our certificate, presented to the API")
	require.Equal(t, apiBase+"/transfers/"+e2e, calls[0].Path)
}

func TestScopesAsConfigured(t *testing.T) {
	f := psptest.NewFakePSP(t)
	cfg := f.Config()
	cfg.Scopes = []string{"pix.read"}
	c, err := psp.New(cfg)
	require.NoError(t, err)
	_, err = c.Status(t.Context(), e2e)
	require.NoError(t, err)
	require.Equal(t, "pix.read", f.SeenTokens()[0].Form.Get("scope"))
}

// TestTokenSharedByConcurrentCalls: one token for every call at once, from
// one request to the endpoint, and reused after.
func TestTokenSharedByConcurrentCalls(t *testing.T) {
	f := psptest.NewFakePSP(t)
	f.TokenDelay = 100 * time.Millisecond
	c := f.Client(t)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			_, err := c.Status(t.Context(), e2e)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	_, err := c.Status(t.Context(), e2e)
	require.NoError(t, err)
	require.Len(t, f.SeenTokens(), 1, "one token request for all the calls")
	for _, call := range f.SeenCalls() {
		require.Equal(t, "Bearer tok1", call.Authorization)
	}
}

// TestUnauthorizedRefetchesOnce: a 401 drops the token and the call is sent
// once more with a new one; a second 401 is the answer, a refused request.
func TestUnauthorizedRefetchesOnce(t *testing.T) {
	f := psptest.NewFakePSP(t)
	f.Refuse["tok1"] = true
	c := f.Client(t)
	res, err := c.Submit(t.Context(), transfer)
	require.NoError(t, err)
	require.Equal(t, psp.StatusSettled, res.Status)
	// The POST went twice, the second time with a new token.
	calls := f.SeenCalls()
	require.Len(t, calls, 2)
	require.Equal(t, []string{"Bearer tok1", "Bearer tok2"}, []string{calls[0].Authorization, calls[1].Authorization})
	require.Equal(t, calls[0].Body, calls[1].Body, "the same request, body and all")
	require.Len(t, f.SeenTokens(), 2)

	// Every token refused: exactly one refetch and one retry, then 401.
	f2 := psptest.NewFakePSP(t)
	f2.Refuse["tok1"], f2.Refuse["tok2"], f2.Refuse["tok3"] = true, true, true
	_, err = f2.Client(t).Status(t.Context(), e2e)
	var refused *psp.RequestError
	require.ErrorAs(t, err, &refused)
	require.Equal(t, http.StatusUnauthorized, refused.StatusCode)
	require.Equal(t, psp.AnswerRequestRefused, psp.Classify(err))
	require.Len(t, f2.SeenCalls(), 2)
	require.Len(t, f2.SeenTokens(), 2)
}

// TestConcurrentUnauthorizedDropsOnce: calls that got the same token
// refused at once share the one new token.
func TestConcurrentUnauthorizedDropsOnce(t *testing.T) {
	f := psptest.NewFakePSP(t)
	c := f.Client(t)
	_, err := c.Status(t.Context(), e2e) // tok1 cached
	require.NoError(t, err)
	f.Mu.Lock()
	f.Refuse["tok1"] = true
	f.TokenDelay = 50 * time.Millisecond
	f.Mu.Unlock()
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			_, err := c.Status(t.Context(), e2e)
			require.NoError(t, err)
		})
	}
	wg.Wait()
	require.Len(t, f.SeenTokens(), 2, "one refetch for all the 401s of tok1")
}

func TestWithoutTokenURLNoToken(t *testing.T) {
	f := psptest.NewFakePSP(t)
	cfg := f.Config()
	cfg.TokenURL, cfg.ClientID, cfg.ClientSecret = "", "", ""
	c, err := psp.New(cfg)
	require.NoError(t, err)
	_, err = c.Status(t.Context(), e2e)
	require.NoError(t, err)
	require.Empty(t, f.SeenTokens())
	require.Empty(t, f.SeenCalls()[0].Authorization)

	f.Refuse[""] = true
	_, err = c.Status(t.Context(), e2e)
	require.Equal(t, psp.AnswerRequestRefused, psp.Classify(err))
	require.Len(t, f.SeenCalls(), 2, "no token, no retry")
}

// TestMutualTLS: without our certificate the PSP does not answer; a CA that
// did not issue the PSP's certificate is not trusted. Neither ever moves
// money: transient.
func TestMutualTLS(t *testing.T) {
	f := psptest.NewFakePSP(t)
	cfg := f.Config()
	cfg.TokenURL, cfg.ClientID, cfg.ClientSecret = "", "", ""
	cfg.CertFile, cfg.KeyFile = "", ""
	c, err := psp.New(cfg)
	require.NoError(t, err)
	_, err = c.Status(t.Context(), e2e)
	require.ErrorIs(t, err, psp.ErrTransient)
	require.Empty(t, f.SeenCalls())

	cfg = f.Config()
	cfg.CAFile = f.CertFile // our own certificate: not the PSP's CA
	c, err = psp.New(cfg)
	require.NoError(t, err)
	_, err = c.Status(t.Context(), e2e)
	require.ErrorIs(t, err, psp.ErrTransient, "the token endpoint's certificate is not trusted")
	var tokenErr *psp.TokenError
	require.ErrorAs(t, err, &tokenErr)
	require.Empty(t, f.SeenTokens())
}

// TestEveryRouteUnderTheBase: each method's request, under the base URL's
// path, with its token.
func TestEveryRouteUnderTheBase(t *testing.T) {
	f := psptest.NewFakePSP(t)
	f.API = psptest.PixAPI
	psptest.CallEveryMethod(t, f.Client(t))

	var got []string
	for _, call := range f.SeenCalls() {
		require.Equal(t, "Bearer tok1", call.Authorization, "%s %s", call.Method, call.Path)
		require.Equal(t, "bank.example", call.ClientCN)
		line := call.Method + " " + call.Path
		if call.Query != "" {
			line += "?" + call.Query
		}
		got = append(got, line)
	}
	require.Equal(t, []string{
		"POST /api/v2/transfers",
		"GET /api/v2/transfers/" + e2e,
		"PUT /api/v2/pix/" + e2e + "/devolucao/" + refundID,
		"GET /api/v2/pix/" + e2e + "/devolucao/" + refundID,
		"GET /api/v2/pix?fim=2026-11-29T13%3A00%3A00Z&inicio=2026-11-29T12%3A00%3A00Z&paginacao.itensPorPagina=100&paginacao.paginaAtual=0",
		"PUT /api/v2/webhook/maria@example.com",
		"GET /api/v2/webhook/maria@example.com",
		"DELETE /api/v2/webhook/maria@example.com",
	}, got)
	require.Len(t, f.SeenTokens(), 1)
}

// TestTokenRefusedIsARefusedRequest: a token endpoint that refuses our
// client is a refused request (never a transient failure that nobody
// sees, never a rejection); nothing reaches the API; its status and RFC
// 6749 code are kept, nothing of its body: not the secret it echoes.
func TestTokenRefusedIsARefusedRequest(t *testing.T) {
	for name, c := range map[string]struct {
		status   int
		body     string
		wantCode string
	}{
		"invalid_client echoing the secret": {401, `{"error":"invalid_client","error_description":"client secret ` + clientSecret + ` is wrong"}`, "invalid_client"},
		"invalid_scope":                     {400, `{"error":"invalid_scope","error_description":"pix.write"}`, "invalid_scope"},
		"the secret as the code":            {400, `{"error":"` + clientSecret + `"}`, ""},
		"the secret in a page":              {403, `<html>denied for ` + clientSecret + `</html>`, ""},
		"an error with a 200":               {200, `{"error":"invalid_client","error_uri":"https://x/` + clientSecret + `"}`, "invalid_client"},
	} {
		t.Run(name, func(t *testing.T) {
			f := psptest.NewFakePSP(t)
			f.TokenAnswer = func(_ int, w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				_, _ = io.WriteString(w, c.body)
			}
			_, err := f.Client(t).RequestRefund(t.Context(), refund)
			require.Error(t, err)
			require.Equal(t, psp.AnswerRequestRefused, psp.Classify(err), "%v", err)
			require.NotErrorIs(t, err, psp.ErrTransient)
			var tokenErr *psp.TokenError
			require.ErrorAs(t, err, &tokenErr)
			require.Equal(t, c.status, tokenErr.StatusCode)
			require.Equal(t, c.wantCode, tokenErr.Code)
			require.NotContains(t, err.Error(), clientSecret)
			require.NotContains(t, fmt.Sprintf("%+v", err), clientSecret)
			require.NotContains(t, err.Error(), "is wrong", "nor the endpoint's description")
			require.Empty(t, f.SeenCalls(), "nothing sent to the API")
		})
	}
}

// TestTokenEndpointDownIsTransient: no answer, a 5xx, a timeout or an
// answer that is no token: ErrTransient, with nothing of the body.
func TestTokenEndpointDownIsTransient(t *testing.T) {
	for name, answer := range map[string]func(int, http.ResponseWriter){
		"503":             func(_ int, w http.ResponseWriter) { w.WriteHeader(503) },
		"500 with secret": func(_ int, w http.ResponseWriter) { w.WriteHeader(500); _, _ = io.WriteString(w, clientSecret) },
		"429":             func(_ int, w http.ResponseWriter) { w.WriteHeader(429) },
		"no access_token": func(_ int, w http.ResponseWriter) {
			_, _ = io.WriteString(w, `{"token_type":"Bearer","x":"`+clientSecret+`"}`)
		},
		"not json":         func(_ int, w http.ResponseWriter) { _, _ = io.WriteString(w, `<html>`+clientSecret) },
		"cut":              func(int, http.ResponseWriter) { panic(http.ErrAbortHandler) },
		"302 (not follow)": func(_ int, w http.ResponseWriter) { w.Header().Set("Location", "/elsewhere"); w.WriteHeader(302) },
	} {
		t.Run(name, func(t *testing.T) {
			f := psptest.NewFakePSP(t)
			f.TokenAnswer = answer
			_, err := f.Client(t).Submit(t.Context(), transfer)
			require.ErrorIs(t, err, psp.ErrTransient)
			require.Equal(t, psp.AnswerTransient, psp.Classify(err))
			require.NotContains(t, err.Error(), clientSecret)
			require.Empty(t, f.SeenCalls())
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		f := psptest.NewFakePSP(t)
		cfg := f.Config()
		cfg.TokenURL = "https://127.0.0.1:1/oauth/token"
		c, err := psp.New(cfg)
		require.NoError(t, err)
		_, err = c.Submit(t.Context(), transfer)
		require.ErrorIs(t, err, psp.ErrTransient)
		require.Equal(t, psp.AnswerTransient, psp.Classify(err))
	})
	t.Run("timeout", func(t *testing.T) {
		f := psptest.NewFakePSP(t)
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		f.TokenAnswer = func(int, http.ResponseWriter) { <-release }
		cfg := f.Config()
		cfg.Timeout = 100 * time.Millisecond
		c, err := psp.New(cfg)
		require.NoError(t, err)
		_, err = c.Submit(t.Context(), transfer)
		require.ErrorIs(t, err, psp.ErrTransient)
		require.Equal(t, psp.AnswerTransient, psp.Classify(err))
	})
}

// TestSecretFileReadAtEachTokenRequest: a wrong secret fixed in its file is
// taken at the next token request, without a new client.
func TestSecretFileReadAtEachTokenRequest(t *testing.T) {
	f := psptest.NewFakePSP(t)
	f.TokenAnswer = func(n int, w http.ResponseWriter) {
		tr := f.SeenTokens()[n]
		req := &http.Request{Header: http.Header{"Authorization": {tr.Authorization}}}
		if _, secret, _ := req.BasicAuth(); secret != clientSecret {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"invalid_client"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"good","token_type":"Bearer","expires_in":3600}`)
	}
	cfg := f.Config()
	cfg.ClientSecret = ""
	cfg.ClientSecretFile = testpki.WriteFile(t, t.TempDir(), "secret", []byte("wrong\n"))
	c, err := psp.New(cfg)
	require.NoError(t, err)
	_, err = c.Status(t.Context(), e2e)
	require.Equal(t, psp.AnswerRequestRefused, psp.Classify(err))
	require.NotContains(t, err.Error(), "wrong")

	testpki.WriteFile(t, "", cfg.ClientSecretFile, []byte(clientSecret+"\n"))
	_, err = c.Status(t.Context(), e2e)
	require.NoError(t, err)
	require.Equal(t, "Bearer good", f.SeenCalls()[0].Authorization)
}

func TestConfigCombinations(t *testing.T) {
	f := psptest.NewFakePSP(t)
	secretFile := testpki.WriteFile(t, t.TempDir(), "secret", []byte(clientSecret))
	for name, c := range map[string]struct {
		change func(*psp.Config)
		want   string
	}{
		"cert without key":            {func(c *psp.Config) { c.KeyFile = "" }, "both the certificate and its key"},
		"key without cert":            {func(c *psp.Config) { c.CertFile = "" }, "both the certificate and its key"},
		"token url without client id": {func(c *psp.Config) { c.ClientID = "" }, "needs a client id"},
		"token url without secret":    {func(c *psp.Config) { c.ClientSecret = "" }, "needs a client secret"},
		"secret and secret file":      {func(c *psp.Config) { c.ClientSecretFile = secretFile }, "not both"},
		"secret file missing":         {func(c *psp.Config) { c.ClientSecret, c.ClientSecretFile = "", secretFile+".missing" }, "no such file"},
		"client id without token url": {func(c *psp.Config) { c.TokenURL = "" }, "without a token url"},
		"token url in clear":          {func(c *psp.Config) { c.TokenURL = "http://psp.example/oauth/token" }, "plain http"},
		"api in clear with a token":   {func(c *psp.Config) { c.BaseURL = "http://psp.example/api/v2" }, "plain http"},
		"base url without scheme":     {func(c *psp.Config) { c.BaseURL = "psp.example" }, "want http(s)"},
		"unreadable certificate":      {func(c *psp.Config) { c.CertFile = f.CAFile + ".missing" }, "client certificate"},
		"ca file without certificate": {func(c *psp.Config) { c.CAFile = secretFile }, "no PEM certificate"},
		"a scope with a space":        {func(c *psp.Config) { c.Scopes = []string{"pix.read pix.write"} }, "not a scope"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := f.Config()
			c.change(&cfg)
			_, err := psp.New(cfg)
			require.ErrorContains(t, err, c.want)
			require.NotContains(t, err.Error(), clientSecret)
		})
	}
	// On a loopback address, plain http is allowed (a simulator).
	_, err := psp.New(psp.Config{BaseURL: "http://127.0.0.1:8090", TokenURL: "http://127.0.0.1:8090/oauth/token", ClientID: "a", ClientSecret: "b"})
	require.NoError(t, err)
}

func TestTokenErrorText(t *testing.T) {
	err := &psp.TokenError{StatusCode: 401, Code: "invalid_client"}
	require.Equal(t, "psp token endpoint refused our client (http 401, invalid_client)", err.Error())
	require.Equal(t, psp.AnswerRequestRefused, psp.Classify(fmt.Errorf("psp submit x: %w", err)))
	down := &psp.TokenError{StatusCode: 503, Transient: true}
	require.True(t, errors.Is(down, psp.ErrTransient))
	require.Equal(t, psp.AnswerTransient, psp.Classify(down))
}
