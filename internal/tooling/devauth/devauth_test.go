package devauth

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/auth"
)

func TestFromEnvDefaults(t *testing.T) {
	s := FromEnv(func(string) string { return "" })
	require.Equal(t, Settings{KeyDir: ".data/auth", Issuer: "pix-dev-issuer", Audience: "pix-api"}, s)
	env := map[string]string{"AUTH_DEV_KEY_DIR": "/k", "AUTH_ISSUER": "i", "AUTH_AUDIENCE": "a"}
	s = FromEnv(func(k string) string { return env[k] })
	require.Equal(t, Settings{KeyDir: "/k", Issuer: "i", Audience: "a"}, s)
	require.Equal(t, "/k/jwks.json", s.JWKSFile())
}

// verifier checks tokens as the API does, against the issuer's JWKS file.
func verifier(t *testing.T, s Settings) *auth.Verifier {
	t.Helper()
	keys, err := auth.NewKeyCache(context.Background(), auth.FileKeys(s.JWKSFile()), auth.KeyCacheOptions{})
	require.NoError(t, err)
	return auth.NewVerifier(s.Issuer, s.Audience, keys, nil)
}

func TestOpenCreatesOnceAndTokensVerify(t *testing.T) {
	s := Settings{KeyDir: t.TempDir() + "/auth", Issuer: DefaultIssuer, Audience: DefaultAudience}
	require.False(t, s.Exists())
	iss, err := s.OpenExisting()
	require.NoError(t, err)
	require.Nil(t, iss, "OpenExisting creates nothing")
	require.False(t, s.Exists())

	iss, err = s.Open()
	require.NoError(t, err)
	require.True(t, s.Exists())
	again, err := s.OpenExisting()
	require.NoError(t, err)
	require.NotNil(t, again)

	// Tokens of the issuer created and of the issuer loaded again verify
	// against the JWKS written the first time: one key pair.
	for _, iss := range []*auth.DevIssuer{iss, again} {
		tok, err := iss.Mint(auth.TokenSpec{Subject: "dev-acc-1", Scopes: []string{auth.ScopeRead}, Accounts: []string{"acc-1"}, TTL: time.Minute}, time.Now())
		require.NoError(t, err)
		c, err := verifier(t, s).Verify(context.Background(), tok)
		require.NoError(t, err)
		require.Equal(t, "dev-acc-1", c.Subject)
		require.True(t, c.MayActFor("acc-1"))
		require.True(t, c.HasScope(auth.ScopeRead))
		require.False(t, c.HasScope(auth.ScopeWrite))
	}

	require.Contains(t, s.APIEnv(), "AUTH_JWKS_FILE="+s.JWKSFile())
	require.Contains(t, s.APIEnv(), "AUTH_REQUIRED=true")
}

func TestTokensRenewBeforeExpiry(t *testing.T) {
	s := Settings{KeyDir: t.TempDir(), Issuer: DefaultIssuer, Audience: DefaultAudience}
	iss, err := s.Open()
	require.NoError(t, err)
	now := time.Now()
	clock := func() time.Time { return now }
	tokens := NewTokens(iss, auth.TokenSpec{Subject: "load", Scopes: []string{auth.ScopeWrite}, Accounts: []string{"a"}, TTL: 9 * time.Minute}, clock)
	first, err := tokens.Token()
	require.NoError(t, err)
	now = now.Add(5 * time.Minute)
	same, err := tokens.Token()
	require.NoError(t, err)
	require.Equal(t, first, same, "two thirds of the lifetime are not over")
	now = now.Add(time.Minute + time.Second)
	renewed, err := tokens.Token()
	require.NoError(t, err)
	require.NotEqual(t, first, renewed)

	keys, err := auth.NewKeyCache(context.Background(), auth.FileKeys(s.JWKSFile()), auth.KeyCacheOptions{})
	require.NoError(t, err)
	c, err := auth.NewVerifier(s.Issuer, s.Audience, keys, clock).Verify(context.Background(), renewed)
	require.NoError(t, err)
	require.Equal(t, "load", c.Subject, "the same subject: the client's Idempotency-Keys stay its own")
}
