package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/tooling/devpki"
	"github.com/pixbank/pix/internal/tooling/dictsim"
	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/internal/webhooksig"
)

// devWebhookSecrets is a WEBHOOK_SECRETS of one PSP, dev-psp, with a fresh
// secret; its client key signs as pixctl demo does.
func devWebhookSecrets(t *testing.T) (secrets string, key []byte) {
	t.Helper()
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	secrets = devpki.DemoClientName + "=whsec_" + base64.StdEncoding.EncodeToString(b)
	key, err = webhooksig.ClientKey(secrets)
	require.NoError(t, err)
	return secrets, key
}

// The demo's client posts what goes to /webhooks/ to the webhook listener,
// over mutual TLS with the demo's certificate (named dev-psp, the PSP it
// signs as), and everything else to the API; over http:// it posts plainly
// (a service whose webhooks share the API's listener). Files that are not
// there are a usage error that says who makes them.
func TestDemoWebhookClient(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, devpki.EnsureDir(dir))
	file := func(name string) string { return filepath.Join(dir, name) }
	ca, err := os.ReadFile(file(devpki.CAFile))
	require.NoError(t, err)
	clientCAs := x509.NewCertPool()
	require.True(t, clientCAs.AppendCertsFromPEM(ca))
	listenerCert, err := tls.LoadX509KeyPair(file(devpki.WebhookServerCertFile), file(devpki.WebhookServerKeyFile))
	require.NoError(t, err)

	type seen struct{ path, cn, signature string }
	hooks := make(chan seen, 4)
	listener := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cn := ""
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			cn = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		hooks <- seen{r.URL.Path, cn, r.Header.Get("webhook-signature")}
		writeJSONAnswer(w, http.StatusAccepted, map[string]any{"status": "pending"})
	}))
	listener.TLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{listenerCert},
		ClientCAs: clientCAs, ClientAuth: tls.RequireAndVerifyClientCert}
	listener.StartTLS()
	t.Cleanup(listener.Close)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSONAnswer(w, http.StatusOK, map[string]any{"path": r.URL.Path})
	}))
	t.Cleanup(api.Close)

	_, key := devWebhookSecrets(t)
	ctx := context.Background()
	hookClient, err := webhookClient(listener.URL, key, file(devpki.DemoClientCertFile), file(devpki.DemoClientKeyFile), file(devpki.CAFile))
	require.NoError(t, err)
	c := (&apiClient{base: api.URL, adminToken: "adm", webhooks: hookClient}).as("acc-0001")
	status, err := c.call(ctx, http.MethodPost, "/webhooks/pix", webhook{EndToEndID: demoID("20261201100000", 1), AccountID: "acc-0001", AmountCents: 1}, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, status)
	got := <-hooks
	require.Equal(t, "/webhooks/pix", got.path)
	require.Equal(t, devpki.DemoClientName, got.cn, "the demo presents its own certificate")
	require.NotEmpty(t, got.signature, "and signs as its PSP")
	var answer struct{ Path string }
	status, err = c.call(ctx, http.MethodGet, "/admin/pix/credits/x", nil, &answer)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "/admin/pix/credits/x", answer.Path, "the rest goes to the API")

	// Without its certificate the listener's handshake refuses it.
	_, err = (&apiClient{base: listener.URL, signingKey: key, http: http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: clientCAs}}}}).call(ctx, http.MethodPost, "/webhooks/pix", webhook{}, nil)
	require.Error(t, err)

	plain, err := webhookClient(api.URL, key, "/nonexistent/cert.pem", "/nonexistent/key.pem", "/nonexistent/ca.pem")
	require.NoError(t, err, "http:// needs no certificate")
	status, err = (&apiClient{base: "http://127.0.0.1:1", webhooks: plain}).call(ctx, http.MethodPost, "/webhooks/pix", webhook{}, &answer)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "/webhooks/pix", answer.Path)

	_, err = webhookClient(listener.URL, key, filepath.Join(t.TempDir(), "demo-client.pem"), file(devpki.DemoClientKeyFile), file(devpki.CAFile))
	require.ErrorContains(t, err, "pixctl dev-pki")
	_, err = webhookClient("ftp://127.0.0.1", key, "", "", "")
	require.ErrorContains(t, err, "want http:// or https://")

	// pixctl demo's defaults are make run's: the listener on 8443, the
	// simulator's control listener on 8091, the demo's certificate in
	// the development PKI.
	r := pixctl(t, env(), "demo", "--help")
	for _, want := range []string{"https://127.0.0.1:8443", "http://127.0.0.1:8091",
		filepath.Join(".data", "pki", devpki.DemoClientCertFile), filepath.Join(".data", "pki", devpki.CAFile)} {
		require.Contains(t, r.stderr+r.stdout, want)
	}
}

// The metric the demo reads to show a PIX came through the catch-up: its
// series summed; absent, not known.
func TestCatchUpFound(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "# HELP pix_psp_catchup_found_total PIX\n# TYPE pix_psp_catchup_found_total counter\n"+
			"pix_psp_catchup_found_total{txid=\"false\"} 2\npix_psp_catchup_found_total{txid=\"true\"} 1\n"+
			"pix_psp_catchup_found_total_other 7\npix_psp_catchup_rejected_total{reason=\"invalid\"} 5\n")
	}))
	t.Cleanup(srv.Close)
	n, ok := catchUpFound(context.Background(), &apiClient{base: srv.URL})
	require.True(t, ok)
	require.InDelta(t, 3, n, 0)
	_, ok = catchUpFound(context.Background(), &apiClient{base: srv.URL + "/nothing"})
	require.False(t, ok)
}

// The demo against the service as make run runs it: the PSP simulator
// speaking the API Pix with OAuth 2.0 and mutual TLS both ways, with the
// development PKI's certificates; the webhooks on their own listener
// (TLS_LISTENERS=webhooks), which knows the simulator and the demo's PSP
// by their certificates (WEBHOOK_MTLS_PSPS) and requires signatures of
// the PSPs that have a secret. The demo's own PIX come signed and with its
// certificate (psp dev-psp); the devolução's PIX through the simulator's
// unsigned webhook (psp pspsim); the PIX the simulator never notifies,
// through the catch-up (psp catchup). MED reaches the DICT simulator as
// make run serves it (cmd/dictsim: mutual TLS, signed XML both ways, the
// same PKI), and the demo's report is returned in two parts.
func TestDemoAgainstTheServiceAsMakeRunRunsIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const adminToken = "pixctl-demo-admin-token"
	issuer := newDevIssuer(t)
	pki := t.TempDir()
	require.NoError(t, devpki.EnsureDir(pki))
	file := func(name string) string { return filepath.Join(pki, name) }
	pair := func(cert, key string) tls.Certificate {
		c, err := tls.LoadX509KeyPair(file(cert), file(key))
		require.NoError(t, err)
		return c
	}
	caPEM, err := os.ReadFile(file(devpki.CAFile))
	require.NoError(t, err)
	ca := x509.NewCertPool()
	require.True(t, ca.AppendCertsFromPEM(caPEM))
	secret, err := os.ReadFile(file(devpki.ClientSecretFile))
	require.NoError(t, err)
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		return ln
	}
	mainLn, hooksLn, pspLn := listen(), listen(), listen()
	pspURL := "https://" + pspLn.Addr().String()
	secrets, signingKey := devWebhookSecrets(t)

	sim := pspsim.New(pspsim.Options{
		Logger: logging.New(io.Discard, "error"),
		TLS: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair(devpki.PSPServerCertFile, devpki.PSPServerKeyFile)},
			ClientCAs: ca, ClientAuth: tls.RequireAndVerifyClientCert},
		OAuth:       &pspsim.OAuthOptions{Clients: map[string]string{devpki.BankClientName: strings.TrimSpace(string(secret))}},
		APIBasePath: "/api/v2",
		WebhookURL:  "https://" + hooksLn.Addr().String() + "/webhooks/api-pix/pix",
		WebhookTLS: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: ca,
			Certificates: []tls.Certificate{pair(devpki.PSPClientCertFile, devpki.PSPClientKeyFile)}},
	})
	simCtx, stopSim := context.WithCancel(ctx)
	simDone := make(chan error, 1)
	go func() { simDone <- sim.Serve(simCtx, pspLn) }()
	t.Cleanup(func() { stopSim(); require.NoError(t, <-simDone) })
	control := httptest.NewServer(sim.ControlHandler())
	t.Cleanup(control.Close)
	dictURL, dictControl := serveDevDICT(t, pki)

	// make run's settings (scripts/run.sh), on the test's own ports,
	// database and Temporal server; the catch-up every second.
	settings := map[string]string{
		"DATABASE_URL":           dbtest.URL(t),
		"TEMPORAL_ADDRESS":       temporaltest.StartT(t).Address,
		"HTTP_ADDR":              mainLn.Addr().String(),
		"ADMIN_TOKEN":            adminToken,
		"AUTH_ISSUER":            issuer.Issuer,
		"AUTH_AUDIENCE":          issuer.Audience,
		"AUTH_JWKS_FILE":         issuer.JWKSFile(),
		"WEBHOOK_SECRETS":        secrets,
		"PSP_URL":                pspURL + "/api/v2",
		"PSP_OAUTH_TOKEN_URL":    pspURL + pspsim.TokenPath,
		"PSP_CLIENT_ID":          devpki.BankClientName,
		"PSP_CLIENT_SECRET_FILE": file(devpki.ClientSecretFile),
		"PSP_TLS_CERT_FILE":      file(devpki.BankClientCertFile),
		"PSP_TLS_KEY_FILE":       file(devpki.BankClientKeyFile),
		"PSP_CA_FILE":            file(devpki.CAFile),
		"WEBHOOK_HTTP_ADDR":      hooksLn.Addr().String(),
		"TLS_LISTENERS":          "webhooks",
		"TLS_CERT_FILE":          file(devpki.WebhookServerCertFile),
		"TLS_KEY_FILE":           file(devpki.WebhookServerKeyFile),
		"TLS_CLIENT_CA_FILE":     file(devpki.CAFile),
		"WEBHOOK_MTLS_PSPS":      devpki.PSPClientName + "=" + devpki.PSPClientName + ";" + devpki.DemoClientName + "=" + devpki.DemoClientName,
		// The PSP at PSP_URL, the simulator (make run's default): with two
		// PSPs configured PSP_NAME is required.
		"PSP_NAME":               devpki.PSPClientName,
		"PSP_CATCHUP_INTERVAL":   "1s",
		"PSP_CATCHUP_GRACE":      "1s",
		"DISPATCH_POLL_INTERVAL": "100ms",
		"OUTBOX_RELAY_ENABLED":   "false",
		"SHUTDOWN_READYZ_DELAY":  "0s",
		// MED as make run has it, the lister every second.
		"BANK_ISPB":                 dictsim.TestBank,
		"MED_DICT_URL":              dictURL,
		"MED_DICT_CERT_FILE":        file(devpki.BankClientCertFile),
		"MED_DICT_KEY_FILE":         file(devpki.BankClientKeyFile),
		"MED_DICT_CA_FILE":          file(devpki.CAFile),
		"MED_DICT_VERIFY_CERT_FILE": file(devpki.DICTSignerCertFile),
		"MED_DICT_LIST_INTERVAL":    "1s",
	}
	cfg, err := config.FromLookup(config.LookupIn(settings))
	require.NoError(t, err)
	a, err := app.New(ctx, cfg, logging.New(io.Discard, "error"), app.WithSettings(settings)) // the sagas' own, as pixd reads them too
	require.NoError(t, err)
	require.NoError(t, a.Migrate(ctx))
	require.NoError(t, a.SeedDemoAccounts(ctx))
	serveCtx, stop := context.WithCancel(ctx)
	var g errgroup.Group
	g.Go(func() error { return a.ServeListeners(serveCtx, app.Listeners{Main: mainLn, Webhooks: hooksLn}) })
	g.Go(func() error { return a.RunWorker(serveCtx) })
	t.Cleanup(func() {
		stop()
		require.NoError(t, g.Wait())
		a.Close()
	})

	dev, err := openDevTokens(envOf(issuer))
	require.NoError(t, err)
	c := &apiClient{base: "http://" + mainLn.Addr().String(), adminToken: adminToken, dev: dev, signingKey: signingKey}
	c.webhooks, err = webhookClient("https://"+hooksLn.Addr().String(), signingKey,
		file(devpki.DemoClientCertFile), file(devpki.DemoClientKeyFile), file(devpki.CAFile))
	require.NoError(t, err)
	psp := &apiClient{base: control.URL}
	var out bytes.Buffer
	say := func(format string, args ...any) { fmt.Fprintf(&out, format+"\n", args...) }
	run := fmt.Sprintf("%014d", time.Now().UnixMilli()%1e14)

	// The demo's own PIX (step 1), signed and with its certificate.
	native := webhook{demoID(run, 1), "acc-0002", 2550, nil, time.Now().UTC().Format(time.RFC3339)}
	var r receipt
	status, err := c.call(ctx, http.MethodPost, "/webhooks/pix", native, &r)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, status, "%+v", r)
	ok, err := awaitCredit(ctx, c, native.EndToEndID, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	_, _, err = demoRefund(ctx, c, psp, run, 30*time.Second, &out, say)
	require.NoError(t, err, out.String())
	require.Contains(t, out.String(), "the simulator delivers it, as its webhook, to POST /webhooks/api-pix/pix")
	require.NotContains(t, out.String(), "the demo delivers it itself")
	requireRow(t, out.String(), "status", "returned")

	caughtUp, err := demoCatchUp(ctx, c, psp, run, time.Minute, say)
	require.NoError(t, err, out.String())
	s := out.String()
	require.Contains(t, s, `webhook="never": the PIX is in the PSP's record (GET /pix) alone`)
	require.Contains(t, s, caughtUp+" -> R$ 35,00 to acc-0001 status=done: credited by the catch-up")
	require.Contains(t, s, "pix_psp_catchup_found_total 0 -> 1")

	blocks, err := demoBlock(ctx, c, psp, run, time.Minute, say)
	require.NoError(t, err, out.String())
	require.Len(t, blocks, 2)
	s = out.String()
	steps := s[strings.Index(s, "\n17. "):]
	// Held at once, released, then held and returned: the held amount
	// follows each step, and the returned block ends returned.
	require.Regexp(t, `(?s)17\. .*held R\$ 30,00.*18\. .*status=released\n.*held R\$ 0,00.*19\. .*status=returning.*status=returned: .*held R\$ 0,00`, steps)

	aggregates, reportID, err := demoMED(ctx, c, psp, &apiClient{base: dictControl}, dictsim.TestBank, run, time.Minute, say)
	require.NoError(t, err, out.String())
	require.Len(t, aggregates, 3)
	require.NotEmpty(t, reportID)
	s = out.String()
	steps = s[strings.Index(s, "\n20. "):]
	// R$ 40,00 held of the R$ 100,00 reported, all returned: the first
	// part at once, the second filled by the later credit.
	require.Regexp(t, `(?s)21\. .*status=acknowledged dict=ACKNOWLEDGED held R\$ 40,00 .*held R\$ 40,00, available R\$ 0,00`+
		`.*22\. .*status=awaiting_refund_request dict=CLOSED`+
		`.*24\. .*held R\$ 60,00, available R\$ 15,00.*status=ended dict=CLOSED held R\$ 0,00 returned R\$ 100,00 \(returned\)`+
		`.*at the DICT: refund request \S+ CLOSED .*held R\$ 0,00, available R\$ 15,00`, steps)

	store := a.Store
	for e2e, want := range map[string]string{
		native.EndToEndID: devpki.DemoClientName,
		demoID(run, 6):    devpki.PSPClientName,
		caughtUp:          "catchup",
	} {
		require.Equal(t, want, inboxPSP(t, store, e2e), e2e)
	}
	t.Log(s)
}

// inboxPSP is the psp of the PIX's inbox row: who told us of it first.
func inboxPSP(t *testing.T, store *db.Store, e2e string) string {
	t.Helper()
	var psp *string
	require.NoError(t, store.Pool().QueryRow(context.Background(), `SELECT psp FROM inbox_messages WHERE end_to_end_id = $1`, e2e).Scan(&psp))
	require.NotNil(t, psp, e2e)
	return *psp
}

// serveDevDICT serves the DICT simulator as make run does (cmd/dictsim,
// dictsim.NewServed) with the development PKI in pki: its API over mutual
// TLS, the bank (dictsim.TestBank) by its client certificate at the PSP,
// the payer by dict-payer.pem. It answers the API's base URL and the
// control routes' URL.
func serveDevDICT(t *testing.T, pki string) (apiURL, controlURL string) {
	t.Helper()
	file := func(name string) string { return filepath.Join(pki, name) }
	server, err := tls.LoadX509KeyPair(file(devpki.DICTServerCertFile), file(devpki.DICTServerKeyFile))
	require.NoError(t, err)
	signer, err := tls.LoadX509KeyPair(file(devpki.DICTSignerCertFile), file(devpki.DICTSignerKeyFile))
	require.NoError(t, err)
	leaf := func(name string) *x509.Certificate {
		pair, err := tls.LoadX509KeyPair(file(name), file(strings.TrimSuffix(name, ".pem")+"-key.pem"))
		require.NoError(t, err)
		return pair.Leaf
	}
	caPEM, err := os.ReadFile(file(devpki.CAFile))
	require.NoError(t, err)
	ca := x509.NewCertPool()
	require.True(t, ca.AppendCertsFromPEM(caPEM))
	sim, tlsConfig, err := dictsim.NewServed(dictsim.Options{OnViolation: func(err error) { t.Errorf("%v", err) }}, dictsim.Credentials{
		Server: server, ClientCAs: ca,
		Signer: dictsim.Signer{Key: signer.PrivateKey.(crypto.Signer), Certificate: signer.Leaf},
		Participants: []dictsim.Participant{
			dictsim.ParticipantOf(dictsim.TestBank, leaf(devpki.BankClientCertFile)),
			dictsim.ParticipantOf(demoMEDPayerISPB, leaf(devpki.DICTPayerCertFile)),
		},
	})
	require.NoError(t, err)
	api := httptest.NewUnstartedServer(sim.Handler())
	api.TLS = tlsConfig
	api.StartTLS()
	t.Cleanup(api.Close)
	control := httptest.NewServer(sim.ControlHandler())
	t.Cleanup(control.Close)
	return api.URL + dictsim.DefaultBasePath, control.URL
}
