package pspsimtests_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/internal/tooling/testpki"
	"github.com/pixbank/pix/internal/webhooksig"
	"github.com/pixbank/pix/tooling/pspspec"
)

// pki is one test's certificates: a CA, and what it issued.
type pki struct {
	pool *x509.CertPool
	ca   testpki.Authority
}

func newPKI(t *testing.T) pki {
	t.Helper()
	ca := testpki.NewAuthority(t, "pspsim test ca")
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca.PEM))
	return pki{pool: pool, ca: ca}
}

func (p pki) cert(t *testing.T, name string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	certPEM, keyPEM := p.ca.Issue(t, name, usage)
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	return c
}

// newTLSBank is the bank's webhook listener over mutual TLS: it takes a
// connection only with a client certificate its CA issued, and takes the
// API Pix's webhook unsigned (its deliveries carry path and peer).
func newTLSBank(t *testing.T, p pki) *bank {
	t.Helper()
	b := &bank{deliveries: make(chan delivery, 10)}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		if err := pspspec.ValidateWebhook(body); err != nil {
			t.Errorf("the simulator's webhook departs from the document: %v", err)
		}
		b.deliveries <- delivery{path: r.URL.Path, header: r.Header.Clone(), body: body, peer: r.TLS.PeerCertificates[0].Subject.CommonName}
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{p.cert(t, "127.0.0.1", x509.ExtKeyUsageServerAuth)},
		ClientCAs:    p.pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the tests' point
	srv.StartTLS()
	t.Cleanup(srv.Close)
	b.url = srv.URL
	return b
}

// The API Pix's webhook: registered per key (PUT /webhook/{chave}),
// posted to {webhookUrl}/pix, unsigned, over mutual TLS with the
// simulator's client certificate.
func TestWebhookRegisteredPerKeyOverMutualTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	bank := newTLSBank(t, p)
	fallback := make(chan []byte, 10)
	fallbackSrv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fallback <- b
	}))
	t.Cleanup(fallbackSrv.Close)
	s := serve(t, pspsim.Options{
		WebhookURL: fallbackSrv.URL + "/webhooks/api-pix/pix",
		WebhookTLS: &tls.Config{Certificates: []tls.Certificate{p.cert(t, "psp-sim", x509.ExtKeyUsageClientAuth)}, RootCAs: p.pool,
			MinVersion: tls.VersionTLS12},
	})
	const chave = "maria@example.com"

	code, body := do(t, http.MethodGet, s.url+"/webhook/"+chave, "")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, pspsim.ProblemNaoEncontrado, problem(t, body).name)
	code, body = do(t, http.MethodPut, s.url+"/webhook/"+chave, `{"webhookUrl":"`+bank.url+`/webhooks/api-pix/"}`)
	require.Equal(t, http.StatusOK, code, "%s", body)
	code, body = do(t, http.MethodGet, s.url+"/webhook/"+chave, "")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"webhookUrl":"`+bank.url+`/webhooks/api-pix/","chave":"`+chave+`","criacao":"2026-11-29T12:00:00Z"}`, string(body))

	at := time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC)
	require.Equal(t, "queued", s.receive(t, receivedAt(1, at, "")))
	d := bank.next(t)
	require.Equal(t, "/webhooks/api-pix/pix", d.path, "{webhookUrl}/pix")
	require.Equal(t, "psp-sim", d.peer, "the simulator's client certificate")
	require.False(t, webhooksig.HasSignature(d.header), "no secret: unsigned, as the API Pix's")
	require.JSONEq(t, `{"pix":[`+receivedAt(1, at, "")+`]}`, string(d.body))
	bank.none(t)
	require.Empty(t, fallback)

	// A key without a webhook of its own: Options.WebhookURL.
	require.Equal(t, "queued", s.receive(t, `{"endToEndId":"`+pixID(2)+`","valor":"1.00","chave":"outra@example.com","horario":"2026-11-29T10:00:00Z"}`))
	require.Contains(t, string(<-fallback), pixID(2))
	bank.none(t)

	code, _ = do(t, http.MethodDelete, s.url+"/webhook/"+chave, "")
	require.Equal(t, http.StatusNoContent, code)
	code, body = do(t, http.MethodDelete, s.url+"/webhook/"+chave, "")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, pspsim.ProblemNaoEncontrado, problem(t, body).name)
	require.Equal(t, "queued", s.receive(t, receivedAt(3, at, "")))
	require.Contains(t, string(<-fallback), pixID(3))
	bank.none(t)

	for name, put := range map[string]struct{ key, body string }{
		"no url":             {chave, `{}`},
		"a relative url":     {chave, `{"webhookUrl":"/webhooks"}`},
		"not http(s)":        {chave, `{"webhookUrl":"ftp://bank.example/webhooks"}`},
		"a field of its own": {chave, `{"webhookUrl":"https://bank.example","secret":"x"}`},
		"a key too long":     {strings.Repeat("k", 78), `{"webhookUrl":"https://bank.example"}`},
	} {
		t.Run(name, func(t *testing.T) {
			code, body := do(t, http.MethodPut, s.url+"/webhook/"+put.key, put.body)
			require.Equal(t, http.StatusBadRequest, code, "%s", body)
			require.Equal(t, pspsim.ProblemWebhookOperacaoInvalida, problem(t, body).name)
		})
	}
}

// A simulator without a client certificate cannot deliver to a bank that
// requires one: nothing arrives.
func TestWebhookWithoutAClientCertificateIsRefusedByTheBank(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	bank := newTLSBank(t, p)
	s := serve(t, pspsim.Options{WebhookURL: bank.url + "/webhooks/api-pix/pix", WebhookTLS: &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS12}})
	s.receive(t, receivedAt(1, time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC), ""))
	bank.none(t)
}

// servedTLS runs a simulator with mutual TLS on its API listener.
func servedTLS(t *testing.T, p pki, opts pspsim.Options) string {
	t.Helper()
	opts.TLS = &tls.Config{
		Certificates: []tls.Certificate{p.cert(t, "127.0.0.1", x509.ExtKeyUsageServerAuth)},
		ClientCAs:    p.pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}
	sim := pspsim.New(opts)
	checkedServe(t, sim, opts.APIBasePath)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- sim.Serve(ctx, ln) }()
	t.Cleanup(sync.OnceFunc(func() {
		cancel()
		require.NoError(t, <-done)
	}))
	return "https://" + ln.Addr().String()
}

func tlsClient(p pki, certs ...tls.Certificate) *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.pool, Certificates: certs, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true}}
}

// With Options.TLS requiring a client certificate, a client without one
// is refused at the handshake; with one the CA issued, served.
func TestServeOverMutualTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	base := servedTLS(t, p, pspsim.Options{})
	_, err := tlsClient(p).Get(base + "/healthz")
	require.Error(t, err, "no client certificate: no connection")
	other := newPKI(t)
	_, err = tlsClient(p, other.cert(t, "stranger", x509.ExtKeyUsageClientAuth)).Get(base + "/healthz")
	require.Error(t, err, "a certificate of another CA: no connection")

	resp, err := tlsClient(p, p.cert(t, "bank", x509.ExtKeyUsageClientAuth)).Get(base + "/pix?inicio=2026-11-29T00:00:00Z&fim=2026-11-30T00:00:00Z")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// OAuth and mutual TLS together, the API under a base path, the control
// routes on a plain listener of their own: the production-like setup.
func TestOAuthOverMutualTLSUnderABasePath(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	sim := pspsim.New(pspsim.Options{APIBasePath: "/api/v2", OAuth: &pspsim.OAuthOptions{Clients: map[string]string{clientID: clientSecret}},
		TLS: &tls.Config{Certificates: []tls.Certificate{p.cert(t, "127.0.0.1", x509.ExtKeyUsageServerAuth)}, ClientCAs: p.pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}})
	checkedServe(t, sim, "/api/v2")
	apiLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	controlLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 2)
	go func() { done <- sim.Serve(ctx, apiLn) }()
	go func() { done <- sim.ServeControl(ctx, controlLn) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, <-done)
	})
	base, control := "https://"+apiLn.Addr().String(), "http://"+controlLn.Addr().String()
	hc := tlsClient(p, p.cert(t, "bank", x509.ExtKeyUsageClientAuth))

	code, body := do(t, http.MethodPost, control+"/sim/pix", receivedAt(1, time.Now().UTC(), ""))
	require.Equal(t, http.StatusAccepted, code, "%s", body)
	code, _ = do(t, http.MethodGet, control+"/pix?inicio=2026-11-29T00:00:00Z&fim=2026-11-30T00:00:00Z", "")
	require.Equal(t, http.StatusNotFound, code, "the API is not on the control listener")

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+pspsim.TokenPath,
		stringsReader(clientCredentials("pix.read").Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(clientID, urlEscape(clientSecret))
	resp, err := hc.Do(req)
	require.NoError(t, err)
	var tok token
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tok))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	list, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/api/v2/pix/"+pixID(1), nil)
	require.NoError(t, err)
	list.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	resp, err = hc.Do(list)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	require.Contains(t, string(b), pixID(1))
}
