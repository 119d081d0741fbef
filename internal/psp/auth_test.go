package psp_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/tooling/testpki"
)

const (
	clientID     = "bank-client"
	clientSecret = "s3cr3t-Do-Not-Leak"
	apiBase      = "/api/v2"
)

// seenRequest is what the fake PSP saw of one request.
type seenRequest struct {
	method, path, query, authorization, clientCN string
	form                                         url.Values
	body                                         string
}

// fakePSP is a PSP's API Pix over mutual TLS, with its OAuth 2.0 token
// endpoint: each test scripts its answers.
type fakePSP struct {
	srv *httptest.Server
	// The files of the bank's side: our certificate and key, the PSP's CA.
	certFile, keyFile, caFile string

	mu     sync.Mutex
	tokens []seenRequest // the token requests
	calls  []seenRequest // the API's
	issued int
	// expiresIn is the expires_in of the token issued n (from 0); 3600
	// past its end.
	expiresIn []int
	// tokenAnswer, when set, answers the token request n instead.
	tokenAnswer func(n int, w http.ResponseWriter)
	// refuse: the API answers 401 to these tokens.
	refuse map[string]bool
	// api answers the API's calls (authenticated ones, when tokens are
	// issued); nil answers a settled transfer.
	api http.HandlerFunc
	// tokenDelay holds each token answer a moment, so that concurrent
	// calls pile up behind one fetch.
	tokenDelay time.Duration
}

func newFakePSP(t *testing.T) *fakePSP {
	t.Helper()
	dir := t.TempDir()
	pspCA := testpki.NewAuthority(t, "psp-ca")
	bankCA := testpki.NewAuthority(t, "bank-ca")
	serverCert, serverKey := pspCA.Issue(t, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	clientCert, clientKey := bankCA.Issue(t, "bank.example", x509.ExtKeyUsageClientAuth)
	f := &fakePSP{
		certFile: testpki.WriteFile(t, dir, "client.pem", clientCert),
		keyFile:  testpki.WriteFile(t, dir, "client-key.pem", clientKey),
		caFile:   testpki.WriteFile(t, dir, "psp-ca.pem", pspCA.PEM),
		refuse:   map[string]bool{},
	}
	cert, err := tls.X509KeyPair(serverCert, serverKey)
	require.NoError(t, err)
	clientCAs := x509.NewCertPool()
	require.True(t, clientCAs.AppendCertsFromPEM(bankCA.PEM))
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth/token", f.token)
	mux.HandleFunc(apiBase+"/", f.serveAPI)
	f.srv = httptest.NewUnstartedServer(mux)
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused on purpose
	f.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs}
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

func seen(r *http.Request) seenRequest {
	s := seenRequest{method: r.Method, path: r.URL.EscapedPath(), query: r.URL.RawQuery, authorization: r.Header.Get("Authorization")}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		s.clientCN = r.TLS.PeerCertificates[0].Subject.CommonName
	}
	b, _ := io.ReadAll(r.Body)
	s.body = string(b)
	r.Body = io.NopCloser(bytes.NewReader(b)) // for the API's handler
	return s
}

func (f *fakePSP) token(w http.ResponseWriter, r *http.Request) {
	s := seen(r)
	s.form, _ = url.ParseQuery(s.body)
	f.mu.Lock()
	n := len(f.tokens)
	f.tokens = append(f.tokens, s)
	answer, delay := f.tokenAnswer, f.tokenDelay
	f.mu.Unlock()
	time.Sleep(delay)
	if answer != nil {
		answer(n, w)
		return
	}
	f.mu.Lock()
	f.issued++
	tok := fmt.Sprintf("tok%d", f.issued)
	expires := 3600
	if n < len(f.expiresIn) {
		expires = f.expiresIn[n]
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":%d,"scope":%q}`, tok, expires, s.form.Get("scope"))
}

func (f *fakePSP) serveAPI(w http.ResponseWriter, r *http.Request) {
	s := seen(r)
	f.mu.Lock()
	f.calls = append(f.calls, s)
	refused := f.refuse[strings.TrimPrefix(s.authorization, "Bearer ")]
	api := f.api
	f.mu.Unlock()
	if refused {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if api != nil {
		api(w, r)
		return
	}
	_, _ = io.WriteString(w, `{"end_to_end_id":"`+e2e+`","status":"settled"}`)
}

// config is the bank's configuration of a client of f.
func (f *fakePSP) config() psp.Config {
	return psp.Config{
		BaseURL: f.srv.URL + apiBase, Timeout: 5 * time.Second,
		TokenURL: f.srv.URL + "/oauth/token", ClientID: clientID, ClientSecret: clientSecret,
		CertFile: f.certFile, KeyFile: f.keyFile, CAFile: f.caFile,
	}
}

func (f *fakePSP) client(t *testing.T) *psp.HTTPClient {
	t.Helper()
	c, err := psp.New(f.config())
	require.NoError(t, err)
	return c
}

func (f *fakePSP) seenTokens() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.tokens...)
}

func (f *fakePSP) seenCalls() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.calls...)
}

// TestClientCredentials: the token request is RFC 6749 §4.4 with the
// client authenticated by HTTP Basic and the scopes asked, over mutual TLS;
// the API call carries the token, over mutual TLS, under the base's path.
func TestClientCredentials(t *testing.T) {
	f := newFakePSP(t)
	res, err := f.client(t).Status(t.Context(), e2e)
	require.NoError(t, err)
	require.Equal(t, psp.StatusSettled, res.Status)

	tokens := f.seenTokens()
	require.Len(t, tokens, 1)
	tr := tokens[0]
	req := &http.Request{Header: http.Header{"Authorization": {tr.authorization}}}
	id, secret, ok := req.BasicAuth()
	require.True(t, ok, "client authentication by HTTP Basic: %q", tr.authorization)
	require.Equal(t, clientID, id)
	require.Equal(t, clientSecret, secret)
	require.Equal(t, "client_credentials", tr.form.Get("grant_type"))
	require.Equal(t, "pix.read pix.write webhook.read webhook.write", tr.form.Get("scope"))
	require.Empty(t, tr.form.Get("client_secret"), "the secret is in the header only")
	require.Equal(t, "bank.example", tr.clientCN, "our certificate, presented to the token endpoint")

	calls := f.seenCalls()
	require.Len(t, calls, 1)
	require.Equal(t, "Bearer tok1", calls[0].authorization)
	require.Equal(t, "bank.example", calls[0].clientCN, "our certificate, presented to the API")
	require.Equal(t, apiBase+"/transfers/"+e2e, calls[0].path)
}

func TestScopesAsConfigured(t *testing.T) {
	f := newFakePSP(t)
	cfg := f.config()
	cfg.Scopes = []string{"pix.read"}
	c, err := psp.New(cfg)
	require.NoError(t, err)
	_, err = c.Status(t.Context(), e2e)
	require.NoError(t, err)
	require.Equal(t, "pix.read", f.seenTokens()[0].form.Get("scope"))
}

// TestTokenSharedByConcurrentCalls: one token for every call at once, from
// one request to the endpoint, and reused after.
func TestTokenSharedByConcurrentCalls(t *testing.T) {
	f := newFakePSP(t)
	f.tokenDelay = 100 * time.Millisecond
	c := f.client(t)
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
	require.Len(t, f.seenTokens(), 1, "one token request for all the calls")
	for _, call := range f.seenCalls() {
		require.Equal(t, "Bearer tok1", call.authorization)
	}
}

// TestUnauthorizedRefetchesOnce: a 401 drops the token and the call is sent
// once more with a new one; a second 401 is the answer, a refused request.
func TestUnauthorizedRefetchesOnce(t *testing.T) {
	f := newFakePSP(t)
	f.refuse["tok1"] = true
	c := f.client(t)
	res, err := c.Submit(t.Context(), transfer)
	require.NoError(t, err)
	require.Equal(t, psp.StatusSettled, res.Status)
	// The POST went twice, the second time with a new token.
	calls := f.seenCalls()
	require.Len(t, calls, 2)
	require.Equal(t, []string{"Bearer tok1", "Bearer tok2"}, []string{calls[0].authorization, calls[1].authorization})
	require.Equal(t, calls[0].body, calls[1].body, "the same request, body and all")
	require.Len(t, f.seenTokens(), 2)

	// Every token refused: exactly one refetch and one retry, then 401.
	f2 := newFakePSP(t)
	f2.refuse["tok1"], f2.refuse["tok2"], f2.refuse["tok3"] = true, true, true
	_, err = f2.client(t).Status(t.Context(), e2e)
	var refused *psp.RequestError
	require.ErrorAs(t, err, &refused)
	require.Equal(t, http.StatusUnauthorized, refused.StatusCode)
	require.Equal(t, psp.AnswerRequestRefused, psp.Classify(err))
	require.Len(t, f2.seenCalls(), 2)
	require.Len(t, f2.seenTokens(), 2)
}

// TestConcurrentUnauthorizedDropsOnce: calls that got the same token
// refused at once share the one new token.
func TestConcurrentUnauthorizedDropsOnce(t *testing.T) {
	f := newFakePSP(t)
	c := f.client(t)
	_, err := c.Status(t.Context(), e2e) // tok1 cached
	require.NoError(t, err)
	f.mu.Lock()
	f.refuse["tok1"] = true
	f.tokenDelay = 50 * time.Millisecond
	f.mu.Unlock()
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			_, err := c.Status(t.Context(), e2e)
			require.NoError(t, err)
		})
	}
	wg.Wait()
	require.Len(t, f.seenTokens(), 2, "one refetch for all the 401s of tok1")
}

func TestWithoutTokenURLNoToken(t *testing.T) {
	f := newFakePSP(t)
	cfg := f.config()
	cfg.TokenURL, cfg.ClientID, cfg.ClientSecret = "", "", ""
	c, err := psp.New(cfg)
	require.NoError(t, err)
	_, err = c.Status(t.Context(), e2e)
	require.NoError(t, err)
	require.Empty(t, f.seenTokens())
	require.Empty(t, f.seenCalls()[0].authorization)

	f.refuse[""] = true
	_, err = c.Status(t.Context(), e2e)
	require.Equal(t, psp.AnswerRequestRefused, psp.Classify(err))
	require.Len(t, f.seenCalls(), 2, "no token, no retry")
}

// TestMutualTLS: without our certificate the PSP does not answer; a CA that
// did not issue the PSP's certificate is not trusted. Neither ever moves
// money: transient.
func TestMutualTLS(t *testing.T) {
	f := newFakePSP(t)
	cfg := f.config()
	cfg.TokenURL, cfg.ClientID, cfg.ClientSecret = "", "", ""
	cfg.CertFile, cfg.KeyFile = "", ""
	c, err := psp.New(cfg)
	require.NoError(t, err)
	_, err = c.Status(t.Context(), e2e)
	require.ErrorIs(t, err, psp.ErrTransient)
	require.Empty(t, f.seenCalls())

	cfg = f.config()
	cfg.CAFile = f.certFile // our own certificate: not the PSP's CA
	c, err = psp.New(cfg)
	require.NoError(t, err)
	_, err = c.Status(t.Context(), e2e)
	require.ErrorIs(t, err, psp.ErrTransient, "the token endpoint's certificate is not trusted")
	var tokenErr *psp.TokenError
	require.ErrorAs(t, err, &tokenErr)
	require.Empty(t, f.seenTokens())
}

// pixAPI answers each route of the client as the spec's examples do.
func pixAPI(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.Contains(r.URL.Path, "/devolucao/"):
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPut {
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = io.WriteString(w, processing)
	case r.URL.Path == apiBase+"/pix":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"parametros":{"inicio":"2026-11-29T12:00:00Z","fim":"2026-11-29T13:00:00Z","paginacao":{"paginaAtual":0,"itensPorPagina":100,"quantidadeDePaginas":1,"quantidadeTotalDeItens":0}},"pix":[]}`)
	case strings.HasPrefix(r.URL.Path, apiBase+"/webhook/") && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"webhookUrl":"https://bank.example/webhooks","cnpj":"12345678000195","criacao":"2026-11-29T12:00:00Z"}`)
	case strings.HasPrefix(r.URL.Path, apiBase+"/webhook/") && r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	case strings.HasPrefix(r.URL.Path, apiBase+"/webhook/"):
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodPost:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"end_to_end_id":"`+e2e+`","status":"pending"}`)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"end_to_end_id":"`+e2e+`","status":"settled"}`)
	}
}

// callEveryMethod calls each method of the client once, successfully.
func callEveryMethod(t *testing.T, c *psp.HTTPClient) {
	t.Helper()
	ctx := t.Context()
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	_, err := c.Submit(ctx, transfer)
	require.NoError(t, err)
	_, err = c.Status(ctx, e2e)
	require.NoError(t, err)
	_, err = c.RequestRefund(ctx, refund)
	require.NoError(t, err)
	_, err = c.RefundStatus(ctx, e2e, refundID)
	require.NoError(t, err)
	_, err = c.ListReceived(ctx, psp.ReceivedQuery{Start: start, End: start.Add(time.Hour), PerPage: 100})
	require.NoError(t, err)
	require.NoError(t, c.SetWebhook(ctx, "maria@example.com", "https://bank.example/webhooks"))
	_, err = c.GetWebhook(ctx, "maria@example.com")
	require.NoError(t, err)
	require.NoError(t, c.DeleteWebhook(ctx, "maria@example.com"))
}

// TestEveryRouteUnderTheBase: each method's request, under the base URL's
// path, with its token.
func TestEveryRouteUnderTheBase(t *testing.T) {
	f := newFakePSP(t)
	f.api = pixAPI
	callEveryMethod(t, f.client(t))

	var got []string
	for _, call := range f.seenCalls() {
		require.Equal(t, "Bearer tok1", call.authorization, "%s %s", call.method, call.path)
		require.Equal(t, "bank.example", call.clientCN)
		line := call.method + " " + call.path
		if call.query != "" {
			line += "?" + call.query
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
	require.Len(t, f.seenTokens(), 1)
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
			f := newFakePSP(t)
			f.tokenAnswer = func(_ int, w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				_, _ = io.WriteString(w, c.body)
			}
			_, err := f.client(t).RequestRefund(t.Context(), refund)
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
			require.Empty(t, f.seenCalls(), "nothing sent to the API")
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
			f := newFakePSP(t)
			f.tokenAnswer = answer
			_, err := f.client(t).Submit(t.Context(), transfer)
			require.ErrorIs(t, err, psp.ErrTransient)
			require.Equal(t, psp.AnswerTransient, psp.Classify(err))
			require.NotContains(t, err.Error(), clientSecret)
			require.Empty(t, f.seenCalls())
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		f := newFakePSP(t)
		cfg := f.config()
		cfg.TokenURL = "https://127.0.0.1:1/oauth/token"
		c, err := psp.New(cfg)
		require.NoError(t, err)
		_, err = c.Submit(t.Context(), transfer)
		require.ErrorIs(t, err, psp.ErrTransient)
		require.Equal(t, psp.AnswerTransient, psp.Classify(err))
	})
	t.Run("timeout", func(t *testing.T) {
		f := newFakePSP(t)
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		f.tokenAnswer = func(int, http.ResponseWriter) { <-release }
		cfg := f.config()
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
	f := newFakePSP(t)
	f.tokenAnswer = func(n int, w http.ResponseWriter) {
		f.mu.Lock()
		tr := f.tokens[n]
		f.mu.Unlock()
		req := &http.Request{Header: http.Header{"Authorization": {tr.authorization}}}
		if _, secret, _ := req.BasicAuth(); secret != clientSecret {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"invalid_client"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"good","token_type":"Bearer","expires_in":3600}`)
	}
	cfg := f.config()
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
	require.Equal(t, "Bearer good", f.seenCalls()[0].authorization)
}

func TestConfigCombinations(t *testing.T) {
	f := newFakePSP(t)
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
		"unreadable certificate":      {func(c *psp.Config) { c.CertFile = f.caFile + ".missing" }, "client certificate"},
		"ca file without certificate": {func(c *psp.Config) { c.CAFile = secretFile }, "no PEM certificate"},
		"a scope with a space":        {func(c *psp.Config) { c.Scopes = []string{"pix.read pix.write"} }, "not a scope"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := f.config()
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
