package api_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/internal/tooling/testpki"
	"github.com/pixbank/pix/internal/webhooksig"
)

// Webhooks authenticated by mutual TLS (WEBHOOK_MTLS_PSPS): the API Pix
// sends its webhooks unsigned, its client certificate the credential. Every
// pairing of certificate, signature and WEBHOOK_SIGNATURES_REQUIRED, on both
// routes and on a saga's own webhook (api.WebhookRoute): a listed certificate of a PSP without a secret is enough, and
// names the PSP; a PSP with a secret must sign too, with its own; a
// certificate not listed, or none, is refused; nothing refused is stored.

// mtlsPKI is a PSPs' client CA and the certificates it issued.
type mtlsPKI struct {
	caPEM []byte
	certs map[string]tls.Certificate // by name (its CN and DNS SAN)
}

func newMTLSPKI(t *testing.T, names ...string) mtlsPKI {
	ca := testpki.NewAuthority(t, "PSPs' client CA")
	p := mtlsPKI{caPEM: ca.PEM, certs: map[string]tls.Certificate{}}
	for _, name := range names {
		certPEM, keyPEM := ca.Issue(t, name, x509.ExtKeyUsageClientAuth)
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		require.NoError(t, err)
		p.certs[name] = pair
	}
	return p
}

// newMTLSServer serves the webhook routes over fs on HTTPS asking every
// client for a certificate of the PKI's CA (as the API's listener does
// when the webhooks share it); tune changes the dependencies.
func newMTLSServer(t *testing.T, fs *fakeStore, pki mtlsPKI, tune func(*api.Deps)) *httptest.Server {
	t.Helper()
	deps := api.Deps{Stores: api.Stores{Webhooks: fakeWebhooks{fs}}, Temporal: fakeTemporal{}, RequestTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), RequireClientCert: true}
	tune(&deps)
	router, err := api.NewRouter(deps, api.WebhookRoutes)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(router)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pki.caPEM))
	srv.TLS = &tls.Config{ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// clientWith is an HTTPS client of srv presenting the certificate of name
// ("": none).
func clientWith(t *testing.T, srv *httptest.Server, pki mtlsPKI, name string) *http.Client {
	t.Helper()
	transport := srv.Client().Transport.(*http.Transport).Clone()
	if name != "" {
		pair := pki.certs[name]
		transport.TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
	}
	hc := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

var pspCKey = []byte("psp-c signing key, 32 bytes long")

func TestUnitWebhookMutualTLSMatrix(t *testing.T) {
	pki := newMTLSPKI(t, "psp-a.example", "psp-b.example", "stranger.example")
	// psp-a: a listed certificate, no secret (the API Pix's way). psp-b:
	// a listed certificate and a secret. psp-c: a secret only.
	certPSPs, err := webhooksig.ParseCertPSPs("psp-a=psp-a.example;psp-b=psp-b.example")
	require.NoError(t, err)
	secrets := webhooksig.NewVerifier([]webhooksig.Secret{{PSP: "psp-b", Key: pspBKey}, {PSP: "psp-c", Key: pspCKey}}, 0, nil)

	type outcome struct {
		status int
		code   string // the error's; "" when stored
		psp    string // the stored row's
	}
	stored := func(psp string) outcome { return outcome{psp: psp} }
	refused := func(code string) outcome { return outcome{status: http.StatusUnauthorized, code: code} }
	signatures := map[string][]byte{"unsigned": nil, "signed by psp-b": pspBKey, "signed by psp-c": pspCKey, "signed by a forger": []byte("a forger's key")}
	for _, required := range []bool{true, false} {
		for _, tc := range []struct {
			cert, signature string
			want            outcome
		}{
			{"psp-a.example", "unsigned", stored("psp-a")},
			{"psp-a.example", "signed by psp-c", refused(api.CodeSignatureInvalid)},
			{"psp-a.example", "signed by psp-b", refused(api.CodeSignatureInvalid)},
			{"psp-a.example", "signed by a forger", refused(api.CodeSignatureInvalid)},
			{"psp-b.example", "unsigned", refused(api.CodeSignatureMissing)},
			{"psp-b.example", "signed by psp-b", stored("psp-b")},
			{"psp-b.example", "signed by psp-c", refused(api.CodeSignatureInvalid)},
			{"psp-b.example", "signed by a forger", refused(api.CodeSignatureInvalid)},
			{"stranger.example", "unsigned", refused(api.CodeClientCertRequired)},
			{"stranger.example", "signed by psp-c", refused(api.CodeClientCertRequired)},
			{"stranger.example", "signed by psp-b", refused(api.CodeClientCertRequired)},
			{"", "unsigned", refused(api.CodeClientCertRequired)},
			{"", "signed by psp-c", refused(api.CodeClientCertRequired)},
		} {
			for _, route := range []string{"/webhooks/pix", apiPixPath, sagaWebhookPath} {
				name := fmt.Sprintf("required=%v/cert=%s/%s%s", required, tc.cert, tc.signature, route)
				t.Run(name, func(t *testing.T) {
					fs := newFakeStore()
					srv := newMTLSServer(t, fs, pki, func(d *api.Deps) {
						d.CertPSPs, d.Signatures, d.RequireSignatures = certPSPs, secrets, required
						d.Sagas = append(d.Sagas, sagaWebhookInto(fs))
					})
					body := nativeWebhookBody(t, "payer", `{"name":"Maria"}`)
					if route == apiPixPath {
						body = batch(apiPixItem(t, validID, nil))
					}
					h := http.Header{"Content-Type": {"application/json"}}
					if key := signatures[tc.signature]; key != nil {
						h = signed(body, "msg_1", time.Now(), key)
					}
					r := doWith(t, clientWith(t, srv, pki, tc.cert), http.MethodPost, srv.URL+route, h, body)
					if tc.want.code != "" {
						require.Equal(t, tc.want.status, r.status, "%v", r.body)
						code, _ := errorOf(t, r)
						require.Equal(t, tc.want.code, code)
						require.Empty(t, fs.inbox, "nothing refused is stored")
						return
					}
					require.Contains(t, []int{http.StatusAccepted, http.StatusOK}, r.status, "%v", r.body)
					require.Equal(t, tc.want.psp, fs.inbox[validID].PSP, "the row names the certificate's PSP")
				})
			}
		}
	}
}

// Without WEBHOOK_MTLS_PSPS a certificate the CA issued names no PSP (as
// before it existed): with signatures required, an unsigned webhook is
// refused whatever certificate came with it; without, it is stored with no
// PSP.
func TestUnitWebhookMutualTLSWithoutAList(t *testing.T) {
	pki := newMTLSPKI(t, "psp-a.example")
	for _, required := range []bool{true, false} {
		fs := newFakeStore()
		srv := newMTLSServer(t, fs, pki, func(d *api.Deps) {
			d.Signatures = webhooksig.NewVerifier([]webhooksig.Secret{{PSP: "psp-b", Key: pspBKey}}, 0, nil)
			d.RequireSignatures = required
		})
		body := nativeWebhookBody(t, "payer", `{"name":"Maria"}`)
		h := http.Header{"Content-Type": {"application/json"}}
		r := doWith(t, clientWith(t, srv, pki, "psp-a.example"), http.MethodPost, srv.URL+"/webhooks/pix", h, body)
		if required {
			require.Equal(t, http.StatusUnauthorized, r.status, "%v", r.body)
			code, _ := errorOf(t, r)
			require.Equal(t, api.CodeSignatureMissing, code)
			require.Empty(t, fs.inbox)
		} else {
			require.Equal(t, http.StatusAccepted, r.status, "%v", r.body)
			require.Equal(t, "", fs.inbox[validID].PSP)
		}
		r = doWith(t, clientWith(t, srv, pki, "psp-a.example"), http.MethodPost, srv.URL+"/webhooks/pix",
			signed(strings.Replace(body, "Maria", "Ana", 1), "msg_1", time.Now(), pspBKey), strings.Replace(body, "Maria", "Ana", 1))
		require.Contains(t, []int{http.StatusAccepted}, r.status, "%v", r.body)
		require.Equal(t, map[bool]string{true: "psp-b", false: ""}[required], fs.inbox[validID].PSP)
	}
}
