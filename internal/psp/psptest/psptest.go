package psptest

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
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

// The bank's client of the fake PSP, and where the PSP's API is.
const (
	ClientID     = "bank-client"
	ClientSecret = "s3cr3t-Do-Not-Leak"
	APIBase      = "/api/v2"
)

// The requests the tests make, and the PSP's answers to them.
const (
	E2E      = "E12345678202611291200abcdef01234"
	RefundID = "dev1"
	RtrID    = "D99999999202611291200abcdefghijk"
)

// Transfer is the transfer the tests submit.
var Transfer = psp.Transfer{EndToEndID: E2E, AccountID: "acc-1", AmountCents: 1500, PixKey: "maria@example.com"}

// Refund is the devolução the tests ask for.
var Refund = psp.RefundRequest{EndToEndID: E2E, ID: RefundID, AmountCents: 1050, Description: "estorno"}

// Devolucao is a PSP's body for a devolução; extra holds more members.
func Devolucao(id, valor, status, extra string) string {
	return `{"id":"` + id + `","rtrId":"` + RtrID + `","valor":"` + valor + `","natureza":"ORIGINAL",` +
		`"horario":{"solicitacao":"2026-11-29T12:00:00Z"},"status":"` + status + `"` + extra + `}`
}

// Processing is Refund's devolução in processing.
var Processing = Devolucao(RefundID, "10.50", "EM_PROCESSAMENTO", "")

// SeenRequest is what the fake PSP saw of one request.
type SeenRequest struct {
	Method, Path, Query, Authorization, ClientCN string
	Form                                         url.Values
	Body                                         string
}

// FakePSP is a PSP's API Pix over mutual TLS, with its OAuth 2.0 token
// endpoint: each test scripts its answers.
type FakePSP struct {
	srv *httptest.Server
	// The files of the bank's side: our certificate and key, the PSP's CA.
	CertFile, KeyFile, CAFile string

	// Mu guards what follows: a test changes it while the PSP serves.
	Mu     sync.Mutex
	tokens []SeenRequest // the token requests
	calls  []SeenRequest // the API's
	issued int
	// ExpiresIn is the expires_in of the token issued n (from 0); 3600
	// past its end.
	ExpiresIn []int
	// TokenAnswer, when set, answers the token request n instead.
	TokenAnswer func(n int, w http.ResponseWriter)
	// Refuse: the API answers 401 to these tokens.
	Refuse map[string]bool
	// API answers the API's calls (authenticated ones, when tokens are
	// issued); nil answers a settled transfer.
	API http.HandlerFunc
	// TokenDelay holds each token answer a moment, so that concurrent
	// calls pile up behind one fetch.
	TokenDelay time.Duration
}

// NewFakePSP starts a FakePSP for the test's time.
func NewFakePSP(t *testing.T) *FakePSP {
	t.Helper()
	dir := t.TempDir()
	pspCA := testpki.NewAuthority(t, "psp-ca")
	bankCA := testpki.NewAuthority(t, "bank-ca")
	serverCert, serverKey := pspCA.Issue(t, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	clientCert, clientKey := bankCA.Issue(t, "bank.example", x509.ExtKeyUsageClientAuth)
	f := &FakePSP{
		CertFile: testpki.WriteFile(t, dir, "client.pem", clientCert),
		KeyFile:  testpki.WriteFile(t, dir, "client-key.pem", clientKey),
		CAFile:   testpki.WriteFile(t, dir, "psp-ca.pem", pspCA.PEM),
		Refuse:   map[string]bool{},
	}
	cert, err := tls.X509KeyPair(serverCert, serverKey)
	require.NoError(t, err)
	clientCAs := x509.NewCertPool()
	require.True(t, clientCAs.AppendCertsFromPEM(bankCA.PEM))
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth/token", f.token)
	mux.HandleFunc(APIBase+"/", f.serveAPI)
	f.srv = httptest.NewUnstartedServer(mux)
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused on purpose
	f.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs}
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

// seen is r as the fake PSP keeps it; r's body can still be read.
func seen(r *http.Request) SeenRequest {
	s := SeenRequest{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Authorization: r.Header.Get("Authorization")}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		s.ClientCN = r.TLS.PeerCertificates[0].Subject.CommonName
	}
	b, _ := io.ReadAll(r.Body)
	s.Body = string(b)
	r.Body = io.NopCloser(bytes.NewReader(b)) // for the API's handler
	return s
}

func (f *FakePSP) token(w http.ResponseWriter, r *http.Request) {
	s := seen(r)
	s.Form, _ = url.ParseQuery(s.Body)
	f.Mu.Lock()
	n := len(f.tokens)
	f.tokens = append(f.tokens, s)
	answer, delay := f.TokenAnswer, f.TokenDelay
	f.Mu.Unlock()
	time.Sleep(delay)
	if answer != nil {
		answer(n, w)
		return
	}
	f.Mu.Lock()
	f.issued++
	tok := fmt.Sprintf("tok%d", f.issued)
	expires := 3600
	if n < len(f.ExpiresIn) {
		expires = f.ExpiresIn[n]
	}
	f.Mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":%d,"scope":%q}`, tok, expires, s.Form.Get("scope"))
}

func (f *FakePSP) serveAPI(w http.ResponseWriter, r *http.Request) {
	s := seen(r)
	f.Mu.Lock()
	f.calls = append(f.calls, s)
	refused := f.Refuse[strings.TrimPrefix(s.Authorization, "Bearer ")]
	api := f.API
	f.Mu.Unlock()
	if refused {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if api != nil {
		api(w, r)
		return
	}
	_, _ = io.WriteString(w, `{"end_to_end_id":"`+E2E+`","status":"settled"}`)
}

// Config is the bank's configuration of a client of f.
func (f *FakePSP) Config() psp.Config {
	return psp.Config{
		BaseURL: f.srv.URL + APIBase, Timeout: 5 * time.Second,
		TokenURL: f.srv.URL + "/oauth/token", ClientID: ClientID, ClientSecret: ClientSecret,
		CertFile: f.CertFile, KeyFile: f.KeyFile, CAFile: f.CAFile,
	}
}

// Client is a client of f with Config.
func (f *FakePSP) Client(t *testing.T) *psp.HTTPClient {
	t.Helper()
	c, err := psp.New(f.Config())
	require.NoError(t, err)
	return c
}

// SeenTokens are the token requests so far.
func (f *FakePSP) SeenTokens() []SeenRequest {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return append([]SeenRequest(nil), f.tokens...)
}

// SeenCalls are the API's requests so far.
func (f *FakePSP) SeenCalls() []SeenRequest {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return append([]SeenRequest(nil), f.calls...)
}

// PixAPI answers each route of the client as the spec's examples do.
func PixAPI(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.Contains(r.URL.Path, "/devolucao/"):
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPut {
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = io.WriteString(w, Processing)
	case r.URL.Path == APIBase+"/pix":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"parametros":{"inicio":"2026-11-29T12:00:00Z","fim":"2026-11-29T13:00:00Z","paginacao":{"paginaAtual":0,"itensPorPagina":100,"quantidadeDePaginas":1,"quantidadeTotalDeItens":0}},"pix":[]}`)
	case strings.HasPrefix(r.URL.Path, APIBase+"/webhook/") && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"webhookUrl":"https://bank.example/webhooks","cnpj":"12345678000195","criacao":"2026-11-29T12:00:00Z"}`)
	case strings.HasPrefix(r.URL.Path, APIBase+"/webhook/") && r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	case strings.HasPrefix(r.URL.Path, APIBase+"/webhook/"):
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodPost:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"end_to_end_id":"`+E2E+`","status":"pending"}`)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"end_to_end_id":"`+E2E+`","status":"settled"}`)
	}
}

// CallEveryMethod calls each method of the client once, successfully.
func CallEveryMethod(t *testing.T, c *psp.HTTPClient) {
	t.Helper()
	ctx := t.Context()
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	_, err := c.Submit(ctx, Transfer)
	require.NoError(t, err)
	_, err = c.Status(ctx, E2E)
	require.NoError(t, err)
	_, err = c.RequestRefund(ctx, Refund)
	require.NoError(t, err)
	_, err = c.RefundStatus(ctx, E2E, RefundID)
	require.NoError(t, err)
	_, err = c.ListReceived(ctx, psp.ReceivedQuery{Start: start, End: start.Add(time.Hour), PerPage: 100})
	require.NoError(t, err)
	require.NoError(t, c.SetWebhook(ctx, "maria@example.com", "https://bank.example/webhooks"))
	_, err = c.GetWebhook(ctx, "maria@example.com")
	require.NoError(t, err)
	require.NoError(t, c.DeleteWebhook(ctx, "maria@example.com"))
}
