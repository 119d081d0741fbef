package app_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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

// With TLS_LISTENERS=webhooks the main listener serves plain HTTP (an
// ingress terminates its TLS) while the webhooks' own listener keeps mutual
// TLS end to end: the handshake itself asks the PSP for its certificate.
func TestTLSOnTheWebhookListenerAlone(t *testing.T) {
	dir := t.TempDir()
	serverCA := testpki.NewAuthority(t, "bank server CA")
	pspCA := testpki.NewAuthority(t, "PSP client CA")
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
	cfg.TLSWebhooksOnly = true
	a, err := app.New(context.Background(), cfg, logging.New(io.Discard, "error"))
	require.NoError(t, err)
	t.Cleanup(a.Close)
	mainLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	webhookLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- a.ServeListeners(ctx, app.Listeners{Main: mainLn, Webhooks: webhookLn}) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
	})

	plain := &http.Client{Timeout: 10 * time.Second}
	res, err := plain.Get("http://" + mainLn.Addr().String() + "/healthz")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "the main listener serves plain HTTP")

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(serverCA.PEM)
	noCert := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	t.Cleanup(noCert.CloseIdleConnections)
	body := `{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc-1","amount_cents":100}`
	_, err = noCert.Post("https://"+webhookLn.Addr().String()+"/webhooks/pix", "application/json", strings.NewReader(body))
	require.Error(t, err, "the webhook listener's handshake requires a client certificate")

	res, err = plain.Post("http://"+webhookLn.Addr().String()+"/webhooks/pix", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode, "plain HTTP is refused by the webhook listener")
}

// TLS_LISTENERS=webhooks without a webhook listener would leave the PSPs on
// plain HTTP: refused at load.
func TestTLSListenersWebhooksNeedsItsListener(t *testing.T) {
	env := map[string]string{"TLS_LISTENERS": "webhooks", "TLS_CERT_FILE": "c.pem", "TLS_KEY_FILE": "k.pem"}
	_, err := config.FromLookup(config.LookupIn(env))
	require.ErrorContains(t, err, "TLS_LISTENERS=webhooks")
	env["TLS_LISTENERS"] = "some"
	_, err = config.FromLookup(config.LookupIn(env))
	require.ErrorContains(t, err, "want all (the default) or webhooks")
}
