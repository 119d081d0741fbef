package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tooling/devauth"
)

// newDevIssuer sets up a development issuer in a directory of the test's
// own.
func newDevIssuer(t *testing.T) devauth.Settings {
	t.Helper()
	s := devauth.Settings{KeyDir: filepath.Join(t.TempDir(), "auth"), Issuer: devauth.DefaultIssuer, Audience: devauth.DefaultAudience}
	_, err := s.Open()
	require.NoError(t, err)
	return s
}

// envOf is a getenv of the development issuer s.
func envOf(s devauth.Settings, more ...string) func(string) string {
	env := map[string]string{"AUTH_DEV_KEY_DIR": s.KeyDir, "AUTH_ISSUER": s.Issuer, "AUTH_AUDIENCE": s.Audience}
	for i := 0; i+1 < len(more); i += 2 {
		env[more[i]] = more[i+1]
	}
	return func(k string) string { return env[k] }
}

// verify checks a token as the API does.
func verify(t *testing.T, s devauth.Settings, token string) auth.Caller {
	t.Helper()
	keys, err := auth.NewKeyCache(context.Background(), auth.FileKeys(s.JWKSFile()), auth.KeyCacheOptions{})
	require.NoError(t, err)
	c, err := auth.NewVerifier(s.Issuer, s.Audience, keys, nil).Verify(context.Background(), token)
	require.NoError(t, err)
	return c
}

func TestTokenCommand(t *testing.T) {
	t.Parallel()
	// The first token creates the issuer's key pair, and says so.
	s := devauth.Settings{KeyDir: filepath.Join(t.TempDir(), "auth"), Issuer: "test-issuer", Audience: "test-api"}
	r := pixctl(t, envOf(s), "token", "-account", "acc-0001", "-account", "acc-0002,acc-0003")
	r.requireStatus(t, cli.ExitOK)
	require.Contains(t, r.stderr, "created the development issuer's key pair in "+s.KeyDir)
	require.True(t, s.Exists())
	c := verify(t, s, strings.TrimSpace(r.stdout))
	require.Equal(t, "dev-acc-0001", c.Subject)
	require.Equal(t, []string{"pix:read", "pix:write"}, c.Scopes)
	require.Equal(t, []string{"acc-0001", "acc-0002", "acc-0003"}, c.Accounts)

	r = pixctl(t, envOf(s), "token", "-account", "acc-0002", "-scope", "pix:read", "-sub", "maria", "-ttl", "2m")
	r.requireStatus(t, cli.ExitOK)
	require.Empty(t, r.stderr, "the key pair exists: nothing created")
	c = verify(t, s, strings.TrimSpace(r.stdout))
	require.Equal(t, "maria", c.Subject)
	require.Equal(t, []string{"pix:read"}, c.Scopes)
	require.Equal(t, []string{"acc-0002"}, c.Accounts)

	// An operator's token needs no account.
	r = pixctl(t, envOf(s), "token", "-scope", "pix:admin")
	r.requireStatus(t, cli.ExitOK)
	c = verify(t, s, strings.TrimSpace(r.stdout))
	require.Equal(t, "dev-operator", c.Subject)
	require.True(t, c.HasScope(auth.ScopeAdmin))

	// -dev-key-dir over AUTH_DEV_KEY_DIR.
	other := devauth.Settings{KeyDir: filepath.Join(t.TempDir(), "other"), Issuer: "test-issuer", Audience: "test-api"}
	r = pixctl(t, envOf(s), "token", "-account", "acc-0001", "-dev-key-dir", other.KeyDir)
	r.requireStatus(t, cli.ExitOK)
	require.Contains(t, r.stderr, "created the development issuer's key pair in "+other.KeyDir)
	verify(t, other, strings.TrimSpace(r.stdout))

	for _, bad := range []struct {
		args []string
		want string
	}{
		{nil, "-account: a token of scope pix:read or pix:write acts for accounts"},
		{[]string{"-account", "acc-0001", "-scope", "pix:read pix:everything"}, `unknown scope "pix:everything"`},
		{[]string{"-account", "acc-0001", "-scope", " "}, "-scope: name at least one"},
		{[]string{"-account", "acc-0001", "-ttl", "-1m"}, "-ttl: -1m0s is not a positive duration"},
		{[]string{"-account", "acc-0001", "extra"}, `unexpected argument "extra"`},
	} {
		r := pixctl(t, envOf(s), append([]string{"token"}, bad.args...)...)
		r.requireStatus(t, cli.ExitUsage)
		require.Contains(t, r.stderr, bad.want, "%v", bad.args)
		require.Empty(t, r.stdout)
	}
}

func TestDevIssuerCommand(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "it's here") // a quote to quote
	s := devauth.Settings{KeyDir: dir, Issuer: devauth.DefaultIssuer, Audience: devauth.DefaultAudience}
	getenv := env("AUTH_DEV_KEY_DIR", dir)
	r := pixctl(t, getenv, "dev-issuer")
	r.requireStatus(t, cli.ExitOK)
	require.Equal(t, s.JWKSFile()+"\n", r.stdout)
	require.True(t, s.Exists())

	// The exports, evaluated by a shell, are the defaults and the paths.
	r = pixctl(t, getenv, "dev-issuer", "-env")
	r.requireStatus(t, cli.ExitOK)
	sh, err := exec.Command("sh", "-c", r.stdout+`
printf '%s|%s|%s|%s' "$AUTH_ISSUER" "$AUTH_AUDIENCE" "$AUTH_DEV_KEY_DIR" "$AUTH_JWKS_FILE"`).Output()
	require.NoError(t, err, r.stdout)
	require.Equal(t, "pix-dev-issuer|pix-api|"+dir+"|"+s.JWKSFile(), string(sh))

	// What the environment sets is kept; a JWKS URL gets no JWKS file.
	r = pixctl(t, envOf(s, "AUTH_ISSUER", "mine", "AUTH_JWKS_URL", "https://idp.example/jwks"), "dev-issuer", "-env")
	r.requireStatus(t, cli.ExitOK)
	require.Contains(t, r.stdout, "export AUTH_ISSUER='mine'\n")
	require.NotContains(t, r.stdout, "AUTH_JWKS_FILE")
}

// The demo's calls against the service with authentication required:
// each customer's calls carry a token minted for its account only, with
// the scope the call needs; the admin routes take ADMIN_TOKEN, or without
// it a pix:admin token of the same issuer.
func TestCustomerCallsCarryTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	issuer := newDevIssuer(t)
	base, store := runService(t, "pixctl-test-admin-token", issuer)
	for _, id := range []string{"acc-0001", "acc-0002"} {
		_, err := store.CreateAccount(ctx, db.NewAccount{ID: id, OwnerName: id, OpeningBalanceCents: 100_000})
		require.NoError(t, err)
	}
	dev, err := openDevTokens(envOf(issuer))
	require.NoError(t, err)
	require.NotNil(t, dev)
	c := &apiClient{base: base, dev: dev}

	var a account
	status, err := c.as("acc-0001").call(ctx, http.MethodGet, "/accounts/acc-0001", nil, &a)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.EqualValues(t, 100_000, a.BalanceCents)
	status, err = c.as("acc-0001").call(ctx, http.MethodGet, "/accounts/acc-0002", nil, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, status, "another customer's account looks missing")

	// A retry under the same key replays: one subject per customer.
	send := func(c *apiClient, key, account string) (int, bool, transfer, error) {
		var tr transfer
		status, h, err := c.callWith(ctx, http.MethodPost, "/pix", http.Header{"Idempotency-Key": {key}},
			map[string]any{"account_id": account, "amount_cents": 100, "pix_key": "joao@example.com"}, &tr)
		return status, h.Get("X-Idempotent-Replay") == "true", tr, err
	}
	key := newKey()
	status, replay, first, err := send(c.as("acc-0001"), key, "acc-0001")
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, status)
	require.False(t, replay)
	status, replay, again, err := send(c.as("acc-0001"), key, "acc-0001")
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, status)
	require.True(t, replay)
	require.Equal(t, first.ID, again.ID)
	var got transfer
	status, err = c.as("acc-0001").call(ctx, http.MethodGet, "/pix/transfers/"+first.ID, nil, &got)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "acc-0001", got.AccountID)

	// PIX_TOKEN is sent as it is: one for acc-0002 can't move acc-0001's money.
	tok := pixctl(t, envOf(issuer), "token", "-account", "acc-0002")
	tok.requireStatus(t, cli.ExitOK)
	fixed := &apiClient{base: base, customerToken: strings.TrimSpace(tok.stdout)}
	_, _, _, err = send(fixed, newKey(), "acc-0001")
	require.ErrorContains(t, err, "POST /pix: 403")
	require.ErrorContains(t, err, "the token is PIX_TOKEN's")

	// Without a token: refused, with what to do about it.
	_, err = (&apiClient{base: base}).as("acc-0001").call(ctx, http.MethodGet, "/accounts/acc-0001", nil, nil)
	require.ErrorContains(t, err, "GET /accounts/acc-0001: 401")
	require.ErrorContains(t, err, "set AUTH_DEV_KEY_DIR to the development issuer's directory")

	// A PIX credited to acc-0001 is its customer's to see, nobody else's.
	// (Waiting for the credit also lets the worker finish starting before
	// the test ends.)
	n := pix.Notification{EndToEndID: "E1234567820261129120000000000007", AccountID: "acc-0001", AmountCents: 250, Payload: []byte(`{}`)}
	_, err = store.Receive(ctx, n)
	require.NoError(t, err)
	waitStatus(t, store, n.EndToEndID, pix.StatusDone)
	var cr credit
	status, err = c.as("acc-0001").call(ctx, http.MethodGet, "/pix/credits/"+n.EndToEndID, nil, &cr)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "done", cr.Status)
	status, err = c.as("acc-0002").call(ctx, http.MethodGet, "/pix/credits/"+n.EndToEndID, nil, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, status)

	// The admin routes without ADMIN_TOKEN: the issuer's pix:admin token.
	getenv := envOf(issuer, "PIX_API_URL", base)
	r := pixctl(t, getenv, "show", n.EndToEndID)
	r.requireStatus(t, cli.ExitOK)
	require.Contains(t, r.stdout, "R$ 2,50")
	r = pixctl(t, getenv, "reconcile")
	r.requireStatus(t, cli.ExitOK)
	require.Contains(t, r.stdout, "the books balance")
}

func TestAdminTokenOf(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "admin-token")
	require.NoError(t, os.WriteFile(file, []byte("from-the-file-0123456789\n"), 0o600))
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	tok, err := adminTokenOf(env("ADMIN_TOKEN", "inline"))
	require.NoError(t, err)
	require.Equal(t, "inline", tok)
	tok, err = adminTokenOf(env("ADMIN_TOKEN_FILE", file))
	require.NoError(t, err)
	require.Equal(t, "from-the-file-0123456789", tok)
	tok, err = adminTokenOf(env())
	require.NoError(t, err)
	require.Empty(t, tok)
	_, err = adminTokenOf(env("ADMIN_TOKEN", "inline", "ADMIN_TOKEN_FILE", file))
	require.ErrorContains(t, err, "set one, not both")
	_, err = adminTokenOf(env("ADMIN_TOKEN_FILE", file+".missing"))
	require.ErrorContains(t, err, "ADMIN_TOKEN_FILE")
}
