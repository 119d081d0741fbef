package config_test

import (
	"crypto/x509"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/tooling/testpki"
)

// The PSP client's settings: read into one psp.Config, the same for pixd
// and pixctl; combinations that can't work, and files that can't be read,
// fail the start; a secret never appears in an error.
func TestPSPClientSettings(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewAuthority(t, "psp-ca")
	cert, key := ca.Issue(t, "bank.example", x509.ExtKeyUsageClientAuth)
	certFile := testpki.WriteFile(t, dir, "client.pem", cert)
	keyFile := testpki.WriteFile(t, dir, "client-key.pem", key)
	caFile := testpki.WriteFile(t, dir, "ca.pem", ca.PEM)
	secretFile := testpki.WriteFile(t, dir, "secret", []byte("file-secret\n"))
	const secret = "inline-Secret-value"

	c, err := config.FromLookup(config.LookupIn(nil))
	require.NoError(t, err)
	require.Equal(t, psp.Config{BaseURL: "http://127.0.0.1:8090", Timeout: c.PSPTimeout}, c.PSP(), "no token, no certificate: a simulator")
	require.False(t, c.PSP().Authenticated())

	full := map[string]string{
		"PSP_URL":             "https://psp.example/api/v2",
		"PSP_OAUTH_TOKEN_URL": "https://psp.example/oauth/token",
		"PSP_CLIENT_ID":       "bank",
		"PSP_CLIENT_SECRET":   secret,
		"PSP_OAUTH_SCOPES":    " pix.read  pix.write ",
		"PSP_TLS_CERT_FILE":   certFile,
		"PSP_TLS_KEY_FILE":    keyFile,
		"PSP_CA_FILE":         caFile,
	}
	c, err = config.FromLookup(config.LookupIn(full))
	require.NoError(t, err)
	require.Equal(t, psp.Config{BaseURL: "https://psp.example/api/v2", Timeout: c.PSPTimeout,
		TokenURL: "https://psp.example/oauth/token", ClientID: "bank", ClientSecret: secret, Scopes: []string{"pix.read", "pix.write"},
		CertFile: certFile, KeyFile: keyFile, CAFile: caFile}, c.PSP())
	_, err = psp.New(c.PSP())
	require.NoError(t, err)

	// From a file: its path is kept, for the client to read at each token
	// request; never its content.
	withFile := pspEnvWith(full, map[string]string{"PSP_CLIENT_SECRET": "", "PSP_CLIENT_SECRET_FILE": secretFile})
	c, err = config.FromLookup(config.LookupIn(withFile))
	require.NoError(t, err)
	require.Equal(t, secretFile, c.PSP().ClientSecretFile)
	require.Empty(t, c.PSP().ClientSecret)

	for name, env := range map[string]map[string]string{
		"cert without key":              pspEnvWith(full, map[string]string{"PSP_TLS_KEY_FILE": ""}),
		"key without cert":              pspEnvWith(full, map[string]string{"PSP_TLS_CERT_FILE": ""}),
		"token url without client id":   pspEnvWith(full, map[string]string{"PSP_CLIENT_ID": ""}),
		"token url without secret":      pspEnvWith(full, map[string]string{"PSP_CLIENT_SECRET": ""}),
		"secret and secret file":        pspEnvWith(full, map[string]string{"PSP_CLIENT_SECRET_FILE": secretFile}),
		"secret file missing":           pspEnvWith(full, map[string]string{"PSP_CLIENT_SECRET": "", "PSP_CLIENT_SECRET_FILE": secretFile + ".missing"}),
		"client id without token url":   pspEnvWith(full, map[string]string{"PSP_OAUTH_TOKEN_URL": ""}),
		"empty scopes":                  pspEnvWith(full, map[string]string{"PSP_OAUTH_SCOPES": "  "}),
		"certificate missing":           pspEnvWith(full, map[string]string{"PSP_TLS_CERT_FILE": certFile + ".missing"}),
		"ca file without a certificate": pspEnvWith(full, map[string]string{"PSP_CA_FILE": secretFile}),
		"token over plain http":         pspEnvWith(full, map[string]string{"PSP_OAUTH_TOKEN_URL": "http://psp.example/oauth/token"}),
		"api over plain http":           pspEnvWith(full, map[string]string{"PSP_URL": "http://psp.example/api/v2"}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := config.FromLookup(config.LookupIn(env))
			require.Error(t, err)
			require.Contains(t, err.Error(), "PSP_")
			require.NotContains(t, err.Error(), secret)
			require.NotContains(t, err.Error(), "file-secret")
		})
	}
}

// pspEnvWith is env changed by changes; "" removes a variable.
func pspEnvWith(env, changes map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		out[k] = v
	}
	for k, v := range changes {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}
