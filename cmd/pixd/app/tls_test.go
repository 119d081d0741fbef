package app_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/tooling/testpki"
	"github.com/pixbank/pix/internal/webhooksig"
)

// mutualTLSAPI is an API served over HTTPS whose webhooks need a client
// certificate of pspCA.
type mutualTLSAPI struct {
	app      *app.App
	base     string // https://host:port
	pspCA    testpki.Authority
	serverCA testpki.Authority
}

// serveMutualTLS serves an API over HTTPS on a loopback port, with the PSPs'
// client CA configured; tune sets the rest of its configuration.
func serveMutualTLS(t *testing.T, tune func(*config.Config)) mutualTLSAPI {
	t.Helper()
	dir := t.TempDir()
	m := mutualTLSAPI{serverCA: testpki.NewAuthority(t, "bank server CA"), pspCA: testpki.NewAuthority(t, "PSP client CA")}
	serverCert, serverKey := m.serverCA.Issue(t, "pix api", x509.ExtKeyUsageServerAuth)

	cfg := config.Default()
	cfg.DatabaseURL = dbtest.URL(t)
	cfg.TemporalAddress = "127.0.0.1:1" // not needed here
	cfg.AuthRequired = false
	cfg.ShutdownReadyzDelay = 0
	cfg.TLSCertFile = testpki.WriteFile(t, dir, "server.pem", serverCert)
	cfg.TLSKeyFile = testpki.WriteFile(t, dir, "server-key.pem", serverKey)
	cfg.TLSClientCAFile = testpki.WriteFile(t, dir, "psp-ca.pem", m.pspCA.PEM)
	tune(&cfg)
	a, err := app.New(context.Background(), cfg, logging.New(io.Discard, "error"))
	require.NoError(t, err)
	t.Cleanup(a.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- a.ServeAPI(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
	})
	m.app, m.base = a, "https://"+ln.Addr().String()
	return m
}

// client is an HTTPS client of the API presenting certPEM (nil: none).
func (m mutualTLSAPI) client(t *testing.T, certPEM, keyPEM []byte) *http.Client {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(m.serverCA.PEM)
	tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if certPEM != nil {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		require.NoError(t, err)
		// Sent whatever CAs the server names: Go's client would otherwise
		// keep a certificate of another CA to itself.
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

// errorCode is the code of an error answer.
func errorCode(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&e))
	return e.Error.Code
}

// The API serves HTTPS and, with a client CA configured, takes webhooks only
// from clients whose certificate that CA issued (the API Pix requirement).
func TestAPIServesMutualTLS(t *testing.T) {
	m := serveMutualTLS(t, func(cfg *config.Config) { cfg.WebhookSignaturesRequired = false })
	a, base, pspCA := m.app, m.base, m.pspCA
	strangerCA := testpki.NewAuthority(t, "someone else's CA")
	client := func(certPEM, keyPEM []byte) *http.Client { return m.client(t, certPEM, keyPEM) }
	post := func(hc *http.Client, id string) (*http.Response, error) {
		body := `{"end_to_end_id":"` + id + `","account_id":"acc-1","amount_cents":100}`
		return hc.Post(base+"/webhooks/pix", "application/json", strings.NewReader(body))
	}
	errorCode := func(res *http.Response) string { return errorCode(t, res) }

	pspCert, pspKey := pspCA.Issue(t, "psp", x509.ExtKeyUsageClientAuth)
	res, err := post(client(pspCert, pspKey), "E1234567820261129120000000000001")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusAccepted, res.StatusCode, "the PSP's certificate is accepted")

	noCert := client(nil, nil)
	res, err = post(noCert, "E1234567820261129120000000000002")
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "a webhook without a client certificate is refused")
	require.Equal(t, "client_certificate_required", errorCode(res))
	res, err = noCert.Get(base + "/healthz")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "routes other than the webhooks need no client certificate")

	strangerCert, strangerKey := strangerCA.Issue(t, "stranger", x509.ExtKeyUsageClientAuth)
	_, err = post(client(strangerCert, strangerKey), "E1234567820261129120000000000003")
	require.ErrorContains(t, err, "certificate", "a certificate from another CA fails the handshake")

	res, err = http.Post("http://"+strings.TrimPrefix(base, "https://")+"/webhooks/pix", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode, "plain HTTP is refused by the TLS listener")

	var stored int
	require.NoError(t, a.Store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM inbox_messages`).Scan(&stored))
	require.Equal(t, 1, stored, "only the PSP's webhook was stored")
}

// The API Pix's webhooks come unsigned over mutual TLS: with signatures
// required (production) and WEBHOOK_MTLS_PSPS listing the PSP's
// certificate, the spec's own examples (pixWebhook1 and pixWebhook2, each
// alone, then together as the spec's WebhookPixBody example) are stored,
// under the PSP's name; a certificate the CA issued to someone not listed
// is refused, and stores nothing.
func TestAPIPixWebhooksAuthenticatedByMutualTLSAlone(t *testing.T) {
	m := serveMutualTLS(t, func(cfg *config.Config) {
		cfg.WebhookSignaturesRequired = true
		cfg.WebhookSecrets = nil
		psps, err := webhooksig.ParseCertPSPs("psp-a=webhooks.psp-a.example;psp-b=psp-b.example")
		require.NoError(t, err)
		cfg.WebhookMTLSPSPs = psps
		cfg.PSPName = "psp-a" // two PSPs: the catch-up's is named
	})
	spec, err := os.ReadFile("../../../api/testdata/api_pix_spec_example.json")
	require.NoError(t, err)
	var example struct{ Pix []json.RawMessage }
	require.NoError(t, json.Unmarshal(spec, &example))
	require.Len(t, example.Pix, 2, "pixWebhook1 and pixWebhook2")

	listedCert, listedKey := m.pspCA.Issue(t, "webhooks.psp-a.example", x509.ExtKeyUsageClientAuth)
	strangerCert, strangerKey := m.pspCA.Issue(t, "webhooks.psp-c.example", x509.ExtKeyUsageClientAuth)
	listed, stranger := m.client(t, listedCert, listedKey), m.client(t, strangerCert, strangerKey)
	post := func(hc *http.Client, body []byte) *http.Response {
		t.Helper()
		res, err := hc.Post(m.base+"/webhooks/api-pix/pix", "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		return res
	}
	stored := func() map[string]string {
		t.Helper()
		rows, err := m.app.Store.Pool().Query(context.Background(), `SELECT end_to_end_id, COALESCE(psp, '') FROM inbox_messages`)
		require.NoError(t, err)
		psps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (kv [2]string, err error) {
			err = row.Scan(&kv[0], &kv[1])
			return kv, err
		})
		require.NoError(t, err)
		out := map[string]string{}
		for _, kv := range psps {
			out[kv[0]] = kv[1]
		}
		return out
	}

	for _, body := range [][]byte{append(append([]byte(`{"pix":[`), example.Pix[0]...), `]}`...), spec} {
		res := post(stranger, body)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode, "a certificate not listed is refused")
		require.Equal(t, "client_certificate_required", errorCode(t, res))
	}
	require.Empty(t, stored(), "nothing of a certificate not listed is stored")

	for i, item := range example.Pix {
		res := post(listed, append(append([]byte(`{"pix":[`), item...), `]}`...))
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, "pixWebhook%d, unsigned, with the listed certificate", i+1)
	}
	res := post(listed, spec)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "the spec's WebhookPixBody example: the redelivery of both")
	require.Equal(t, map[string]string{
		"E12345678202009091221kkkkkkkkkkk": "psp-a",
		"E87654321202009091221dfghi123456": "psp-a",
	}, stored(), "stored under the certificate's PSP")

	res, err = m.client(t, nil, nil).Post(m.base+"/webhooks/api-pix/pix", "application/json", bytes.NewReader(spec))
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "no certificate: refused")
	require.Equal(t, "client_certificate_required", errorCode(t, res))
}
