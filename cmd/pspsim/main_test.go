package main

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/internal/tooling/testpki"
)

func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestDefaultsAreWithoutOAuthNorTLS(t *testing.T) {
	t.Parallel()
	opts, err := options(env(nil))
	require.NoError(t, err)
	require.Nil(t, opts.OAuth)
	require.Nil(t, opts.TLS)
	require.Nil(t, opts.WebhookTLS)
}

func TestOAuthAndMutualTLSFromTheEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := testpki.NewAuthority(t, "dev ca")
	serverCert, serverKey := ca.Issue(t, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	clientCert, clientKey := ca.Issue(t, "pspsim", x509.ExtKeyUsageClientAuth)
	vars := map[string]string{
		"PSP_SIM_TLS_CERT_FILE":            testpki.WriteFile(t, dir, "server.pem", serverCert),
		"PSP_SIM_TLS_KEY_FILE":             testpki.WriteFile(t, dir, "server-key.pem", serverKey),
		"PSP_SIM_TLS_CLIENT_CA_FILE":       testpki.WriteFile(t, dir, "ca.pem", ca.PEM),
		"PSP_SIM_OAUTH_CLIENT_ID":          "banco",
		"PSP_SIM_OAUTH_CLIENT_SECRET_FILE": testpki.WriteFile(t, dir, "secret", []byte("s3cret\n")),
		"PSP_SIM_OAUTH_TOKEN_LIFETIME":     "30s",
		"PSP_SIM_OAUTH_SCOPES":             "pix.read pix.write",
		"PSP_SIM_WEBHOOK_TLS_CERT_FILE":    testpki.WriteFile(t, dir, "client.pem", clientCert),
		"PSP_SIM_WEBHOOK_TLS_KEY_FILE":     testpki.WriteFile(t, dir, "client-key.pem", clientKey),
		"PSP_SIM_WEBHOOK_CA_FILE":          testpki.WriteFile(t, dir, "ca.pem", ca.PEM),
		"PSP_SIM_WEBHOOKS_TXID_ONLY":       "true",
		"PSP_SIM_API_BASE_PATH":            "/api/v2",
	}
	opts, err := options(env(vars))
	require.NoError(t, err)
	require.Equal(t, tls.RequireAndVerifyClientCert, opts.TLS.ClientAuth)
	require.Len(t, opts.TLS.Certificates, 1)
	require.Equal(t, &pspsim.OAuthOptions{Clients: map[string]string{"banco": "s3cret"}, TokenLifetime: 30 * time.Second,
		Scopes: []string{"pix.read", "pix.write"}}, opts.OAuth)
	require.Len(t, opts.WebhookTLS.Certificates, 1)
	require.NotNil(t, opts.WebhookTLS.RootCAs)
	require.True(t, opts.WebhooksTxidOnly)
	require.Equal(t, "/api/v2", opts.APIBasePath)

	for name, change := range map[string]map[string]string{
		"a client CA without a certificate": {"PSP_SIM_TLS_CERT_FILE": "", "PSP_SIM_TLS_KEY_FILE": ""},
		"a certificate without its key":     {"PSP_SIM_TLS_KEY_FILE": ""},
		"a secret both ways":                {"PSP_SIM_OAUTH_CLIENT_SECRET": "other"},
		"a client id without a secret":      {"PSP_SIM_OAUTH_CLIENT_SECRET_FILE": ""},
		"a secret without a client id":      {"PSP_SIM_OAUTH_CLIENT_ID": ""},
		"a lifetime not a duration":         {"PSP_SIM_OAUTH_TOKEN_LIFETIME": "soon"},
		"a CA file without a certificate":   {"PSP_SIM_WEBHOOK_CA_FILE": testpki.WriteFile(t, dir, "empty.pem", []byte("nothing"))},
	} {
		t.Run(name, func(t *testing.T) {
			changed := map[string]string{}
			for k, v := range vars {
				changed[k] = v
			}
			for k, v := range change {
				changed[k] = v
			}
			_, err := options(env(changed))
			require.Error(t, err)
			require.NotContains(t, err.Error(), "s3cret")
		})
	}
}
