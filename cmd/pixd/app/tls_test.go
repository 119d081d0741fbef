package app_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/tooling/testpki"
)

// The API serves HTTPS and, with a client CA configured, takes webhooks only
// from clients whose certificate that CA issued (the API Pix requirement).
func TestAPIServesMutualTLS(t *testing.T) {
	dir := t.TempDir()
	serverCA := testpki.NewAuthority(t, "bank server CA")
	pspCA := testpki.NewAuthority(t, "PSP client CA")
	strangerCA := testpki.NewAuthority(t, "someone else's CA")
	serverCert, serverKey := serverCA.Issue(t, "pix api", x509.ExtKeyUsageServerAuth)

	cfg := config.Default()
	cfg.DatabaseURL = dbtest.URL(t)
	cfg.TemporalAddress = "127.0.0.1:1" // not needed here
	cfg.WebhookSignaturesRequired = false
	cfg.AuthRequired = false
	cfg.ShutdownReadyzDelay = 0
	cfg.TLSCertFile = testpki.WriteFile(t, dir, "server.pem", serverCert)
	cfg.TLSKeyFile = testpki.WriteFile(t, dir, "server-key.pem", serverKey)
	cfg.TLSClientCAFile = testpki.WriteFile(t, dir, "psp-ca.pem", pspCA.PEM)
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
	base := "https://" + ln.Addr().String()

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(serverCA.PEM)
	client := func(certPEM, keyPEM []byte) *http.Client {
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
	post := func(hc *http.Client, id string) (*http.Response, error) {
		body := `{"end_to_end_id":"` + id + `","account_id":"acc-1","amount_cents":100}`
		return hc.Post(base+"/webhooks/pix", "application/json", strings.NewReader(body))
	}
	errorCode := func(res *http.Response) string {
		defer res.Body.Close()
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		require.NoError(t, json.NewDecoder(res.Body).Decode(&e))
		return e.Error.Code
	}

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

	res, err = http.Post("http://"+ln.Addr().String()+"/webhooks/pix", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode, "plain HTTP is refused by the TLS listener")

	var stored int
	require.NoError(t, a.Store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM inbox_messages`).Scan(&stored))
	require.Equal(t, 1, stored, "only the PSP's webhook was stored")
}
