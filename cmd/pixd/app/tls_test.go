package app_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
)

// authority is a certificate authority made for one test.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newAuthority(t *testing.T, name string) authority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return authority{cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate and key (PEM) signed by the authority.
func (a authority) issue(t *testing.T, name string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// The API serves HTTPS and, with a client CA configured, takes webhooks only
// from clients whose certificate that CA issued (the API Pix requirement).
func TestAPIServesMutualTLS(t *testing.T) {
	dir := t.TempDir()
	serverCA := newAuthority(t, "bank server CA")
	pspCA := newAuthority(t, "PSP client CA")
	strangerCA := newAuthority(t, "someone else's CA")
	serverCert, serverKey := serverCA.issue(t, "pix api", x509.ExtKeyUsageServerAuth)

	cfg := config.Default()
	cfg.DatabaseURL = dbtest.URL(t)
	cfg.TemporalAddress = "127.0.0.1:1" // not needed here
	cfg.WebhookSignaturesRequired = false
	cfg.AuthRequired = false
	cfg.ShutdownReadyzDelay = 0
	cfg.TLSCertFile = writeFile(t, dir, "server.pem", serverCert)
	cfg.TLSKeyFile = writeFile(t, dir, "server-key.pem", serverKey)
	cfg.TLSClientCAFile = writeFile(t, dir, "psp-ca.pem", pspCA.pem)
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
	roots.AppendCertsFromPEM(serverCA.pem)
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

	pspCert, pspKey := pspCA.issue(t, "psp", x509.ExtKeyUsageClientAuth)
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

	strangerCert, strangerKey := strangerCA.issue(t, "stranger", x509.ExtKeyUsageClientAuth)
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
