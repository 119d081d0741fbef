package config_test

import (
	"testing"

	"github.com/pixbank/pix/internal/config"
)

// AUTH_JWKS_URL may be plain http only on loopback. A prefix test lets
// plain http to any host through: whoever is on the path can then serve
// their own keys and mint tokens for any account.
func TestAttackPlainHTTPJWKSURLOffLoopback(t *testing.T) {
	for _, url := range []string{
		"http://127.0.0.1.attacker.example/jwks.json",
		"http://localhost.attacker.example/jwks.json",
		"http://localhost@attacker.example/jwks.json",
		"http://127.0.0.1@10.9.8.7/jwks.json",
	} {
		if _, err := config.FromLookup(config.LookupIn(map[string]string{"AUTH_JWKS_URL": url})); err == nil {
			t.Errorf("AUTH_JWKS_URL=%s accepted: plain http to a host that is not loopback", url)
		}
	}
}
