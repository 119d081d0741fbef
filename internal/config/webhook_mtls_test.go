package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/config"
)

// WEBHOOK_MTLS_PSPS: the PSPs whose client certificate authenticates their
// webhooks (the API Pix sends them unsigned over mutual TLS).
func TestWebhookMTLSPSPs(t *testing.T) {
	mtls := map[string]string{
		"WEBHOOK_MTLS_PSPS":  "psp-a=webhooks.psp-a.example,PSP A;psp-b=psp-b.example",
		"TLS_CERT_FILE":      "/etc/pix/tls.pem",
		"TLS_KEY_FILE":       "/etc/pix/tls-key.pem",
		"TLS_CLIENT_CA_FILE": "/etc/pix/psp-ca.pem",
		"AUTH_REQUIRED":      "false",
		"PSP_NAME":           "psp-a", // several PSPs: the catch-up's is named
	}
	c, err := config.FromLookup(config.LookupIn(mtls))
	require.NoError(t, err)
	require.Equal(t, []string{"psp-a", "psp-b"}, c.WebhookMTLSPSPs.PSPs())
	require.True(t, c.WebhookSignaturesRequired)
	require.NoError(t, c.CheckAPI(), "signatures required, and the listed certificates authenticate: no secret needed")

	for _, bad := range []struct{ value, says string }{
		{"psp-a=cn1;", "entry 2 is empty"},
		{"psp-a=cn1;psp-a=cn2", "listed twice"},
		{"psp-a=cn1;psp-b=cn1", "listed twice"},
		{"psp-a=", "identity 1"},
		{"psp-a", "no '='"},
	} {
		env := map[string]string{}
		for k, v := range mtls {
			env[k] = v
		}
		env["WEBHOOK_MTLS_PSPS"] = bad.value
		_, err := config.FromLookup(config.LookupIn(env))
		require.ErrorContains(t, err, "WEBHOOK_MTLS_PSPS: ", bad.value)
		require.ErrorContains(t, err, bad.says, bad.value)
	}

	_, err = config.FromLookup(config.LookupIn(map[string]string{"WEBHOOK_MTLS_PSPS": "psp-a=cn1", "AUTH_REQUIRED": "false"}))
	require.ErrorContains(t, err, "WEBHOOK_MTLS_PSPS: a client certificate is verified against TLS_CLIENT_CA_FILE")

	c, err = config.FromLookup(config.LookupIn(map[string]string{"WEBHOOK_MTLS_PSPS": "", "AUTH_REQUIRED": "false"}))
	require.NoError(t, err)
	require.False(t, c.WebhookMTLSPSPs.Listed())
	require.ErrorContains(t, c.CheckAPI(), "WEBHOOK_MTLS_PSPS lists no PSP", "signatures required with neither secrets nor certificates")
}
