//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/pix"
)

// securityFixture is a stack whose issuer holds two keys (the e2e issuer's
// Ed25519 key and an RSA key of the test), with two customers' data in it:
// the caller's account acc-own and the victim's acc-victim.
type securityFixture struct {
	s   *stack
	rsa *rsa.PrivateKey
	// The victim's transfer and credit, and the caller's own.
	victimTransfer, ownTransfer string
	victimCredit, ownCredit     string
}

const rsaKeyID = "e2e-rsa-1"

func newSecurityFixture(t *testing.T) *securityFixture {
	t.Helper()
	if testing.Short() {
		t.Skip("integration tier: a whole stack (run without -short)")
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	// The issuer's JWKS: the e2e key, and the RSA key pinned to RS256.
	b, err := os.ReadFile(e2eJWKSFile)
	require.NoError(t, err)
	var set jose.JSONWebKeySet
	require.NoError(t, json.Unmarshal(b, &set))
	set.Keys = append(set.Keys, jose.JSONWebKey{Key: &rsaKey.PublicKey, KeyID: rsaKeyID, Algorithm: "RS256", Use: "sig"})
	jwks, err := json.Marshal(set)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "jwks.json")
	require.NoError(t, os.WriteFile(path, jwks, 0o644))

	s := newStack(t, shared, func(c *config.Config) { c.AuthJWKSFile = path })
	f := &securityFixture{s: s, rsa: rsaKey}
	s.openAccount("acc-own", 100_000)
	s.openAccount("acc-victim", 100_000)
	e2eAccounts.Delete("acc-victim") // the victim's account is nobody's here but the victim's

	f.ownTransfer = f.transfer(t, "acc-own")
	f.victimTransfer = f.transfer(t, "acc-victim")
	f.ownCredit, f.victimCredit = pixID(), pixID()
	require.Equal(t, http.StatusAccepted, s.post(webhook{f.ownCredit, "acc-own", 1_000}).Status)
	require.Equal(t, http.StatusAccepted, s.post(webhook{f.victimCredit, "acc-victim", 1_000}).Status)
	s.waitStatus(f.ownCredit, "done", 30*time.Second)
	s.waitStatus(f.victimCredit, "done", 30*time.Second)
	// The transfers' sagas settle after their 201 and write their events
	// then: settled before the matrix, so that no case's "changes nothing"
	// sees a saga's late write (an outbox event counted during the first
	// case, seen under load).
	s.waitTransfer(f.ownTransfer, pix.TransferSettled, 30*time.Second)
	s.waitTransfer(f.victimTransfer, pix.TransferSettled, 30*time.Second)
	return f
}

// transfer debits account by a transfer its owner asked for, and returns
// the transfer's id.
func (f *securityFixture) transfer(t *testing.T, account string) string {
	t.Helper()
	r := f.send(t, http.MethodPost, "/pix", f.token(t, tokenFor(account)), uuid.NewString(), transferFor(account))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.raw)
	return r.body["id"].(string)
}

func transferFor(account string) map[string]any {
	return map[string]any{"account_id": account, "amount_cents": 1_500, "pix_key": "maria@example.com"}
}

// claims are a token's claims, valid for account with both customer scopes.
func tokenFor(accounts ...string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss": e2eIssuer.Issuer, "aud": []string{e2eIssuer.Audience}, "sub": "customer-" + accounts[0],
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"scope": auth.ScopeRead + " " + auth.ScopeWrite, "accounts": accounts,
	}
}

// with returns claims with key set to value; a nil value removes it.
func with(c jwt.MapClaims, key string, value any) jwt.MapClaims {
	out := jwt.MapClaims{}
	for k, v := range c {
		out[k] = v
	}
	if value == nil {
		delete(out, key)
	} else {
		out[key] = value
	}
	return out
}

// token signs c with the e2e issuer's Ed25519 key.
func (f *securityFixture) token(t *testing.T, c jwt.MapClaims) string {
	t.Helper()
	s, err := e2eIssuer.SignClaims(c)
	require.NoError(t, err)
	return s
}

// signed signs c with method and key under kid.
func signed(t *testing.T, method jwt.SigningMethod, kid string, key any, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

// unsigned is an "alg: none" token.
func unsigned(t *testing.T, kid string, c jwt.MapClaims) string {
	t.Helper()
	return signed(t, jwt.SigningMethodNone, kid, jwt.UnsafeAllowNoneSignatureType, c)
}

// tampered swaps a token's payload for c, keeping its header and signature.
func tampered(t *testing.T, token string, c jwt.MapClaims) string {
	t.Helper()
	parts := strings.Split(token, ".")
	payload, err := json.Marshal(c)
	require.NoError(t, err)
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
}

type securityReply struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

// send makes a request with the Authorization header authz ("" for none;
// a value without a space is sent as a bearer token).
func (f *securityFixture) send(t *testing.T, method, path, authz, key string, body any) securityReply {
	t.Helper()
	var raw []byte
	if body != nil {
		var err error
		raw, err = json.Marshal(body)
		require.NoError(t, err)
	}
	req, err := http.NewRequest(method, f.s.baseURL+path, bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	switch {
	case authz == "":
	case strings.Contains(authz, " "):
		req.Header.Set("Authorization", authz)
	default:
		req.Header.Set("Authorization", "Bearer "+authz)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(res.Body)
	require.NoError(t, err)
	var m map[string]any
	_ = json.Unmarshal(buf.Bytes(), &m) //nolint:errcheck // asserted by the cases
	return securityReply{res.StatusCode, res.Header, m, buf.Bytes()}
}

// books is what a refused request must leave as it was: every table a
// request could write, and every balance.
func (f *securityFixture) books(t *testing.T) string {
	t.Helper()
	var snapshot string
	require.NoError(t, f.s.store.Pool().QueryRow(context.Background(), `
		SELECT concat_ws(' ',
			(SELECT string_agg(id || '=' || balance_cents, ',' ORDER BY id) FROM accounts),
			(SELECT count(*) FROM pix_transfers), (SELECT count(*) FROM idempotency_keys),
			(SELECT count(*) FROM inbox_messages), (SELECT count(*) FROM pix_credits),
			(SELECT count(*) FROM outbox_events), (SELECT count(*) FROM pix_transfer_refunds))`).Scan(&snapshot))
	return snapshot
}

func TestSecurityMatrix(t *testing.T) {
	f := newSecurityFixture(t)
	valid := tokenFor("acc-own")
	good := f.token(t, valid)
	now := time.Now()
	_, otherKey, err := ed25519Key()
	require.NoError(t, err)
	rsaPublicPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: must(x509.MarshalPKIXPublicKey(&f.rsa.PublicKey))})
	edPublic := e2eIssuerPublicKey(t)
	adminJWT := f.token(t, with(with(valid, "scope", auth.ScopeAdmin), "accounts", nil))
	missingTransfer, missingCredit := uuid.NewString(), pixID()

	post := func(authz string, body any) func() securityReply {
		return func() securityReply { return f.send(t, http.MethodPost, "/pix", authz, uuid.NewString(), body) }
	}
	get := func(path, authz string) func() securityReply {
		return func() securityReply { return f.send(t, http.MethodGet, path, authz, "", nil) }
	}
	own := transferFor("acc-own")
	invalidToken := `error="invalid_token"`
	scopeChallenge := `error="insufficient_scope"`

	cases := []struct {
		name   string
		do     func() securityReply
		status int
		code   string
		// challenge is a part of WWW-Authenticate; "-" asserts none.
		challenge string
	}{
		// Who is calling: every token problem is 401, nothing written.
		{"no token", post("", own), 401, "unauthorized", `Bearer realm="pix"`},
		{"basic credentials", post("Basic YWxpY2U6c2VjcmV0", own), 401, "unauthorized", invalidToken},
		{"empty bearer", post("Bearer ", own), 401, "unauthorized", invalidToken},
		{"malformed token", post("not.a.jwt", own), 401, "unauthorized", invalidToken},
		{"garbage token", post("Bearer "+strings.Repeat("A", 300), own), 401, "unauthorized", invalidToken},
		{"expired", post(f.token(t, with(valid, "exp", now.Add(-2*time.Minute).Unix())), own), 401, "unauthorized", invalidToken},
		{"not yet valid", post(f.token(t, with(valid, "nbf", now.Add(5*time.Minute).Unix())), own), 401, "unauthorized", invalidToken},
		{"issued in the future", post(f.token(t, with(valid, "iat", now.Add(5*time.Minute).Unix())), own), 401, "unauthorized", invalidToken},
		{"no exp", post(f.token(t, with(valid, "exp", nil)), own), 401, "unauthorized", invalidToken},
		{"wrong issuer", post(f.token(t, with(valid, "iss", "https://evil.example")), own), 401, "unauthorized", invalidToken},
		{"no issuer", post(f.token(t, with(valid, "iss", nil)), own), 401, "unauthorized", invalidToken},
		{"wrong audience", post(f.token(t, with(valid, "aud", []string{"another-api"})), own), 401, "unauthorized", invalidToken},
		{"no subject", post(f.token(t, with(valid, "sub", nil)), own), 401, "unauthorized", invalidToken},
		{"unknown kid", post(signed(t, jwt.SigningMethodEdDSA, "kid-nobody-has", otherKey, valid), own), 401, "unauthorized", invalidToken},
		{"no kid", post(signed(t, jwt.SigningMethodEdDSA, "", otherKey, valid), own), 401, "unauthorized", invalidToken},
		{"forged with our kid", post(signed(t, jwt.SigningMethodEdDSA, e2eIssuer.KeyID(), otherKey, valid), own), 401, "unauthorized", invalidToken},
		{"alg none", post(unsigned(t, e2eIssuer.KeyID(), valid), own), 401, "unauthorized", invalidToken},
		{"HS256 with the RSA public key", post(signed(t, jwt.SigningMethodHS256, rsaKeyID, rsaPublicPEM, valid), own), 401, "unauthorized", invalidToken},
		{"HS256 with the Ed25519 public key", post(signed(t, jwt.SigningMethodHS256, e2eIssuer.KeyID(), []byte(edPublic), valid), own), 401, "unauthorized", invalidToken},
		{"RS256 key used for RS512", post(signed(t, jwt.SigningMethodRS512, rsaKeyID, f.rsa, valid), own), 401, "unauthorized", invalidToken},
		{"tampered accounts", post(tampered(t, good, with(valid, "accounts", []string{"acc-own", "acc-victim"})), transferFor("acc-victim")), 401, "unauthorized", invalidToken},
		{"accounts not a list", post(f.token(t, with(valid, "accounts", "acc-victim")), transferFor("acc-victim")), 401, "unauthorized", invalidToken},

		// What the caller may do: scopes, then accounts.
		{"read scope on a write", post(f.token(t, with(valid, "scope", auth.ScopeRead)), own), 403, "insufficient_scope", `scope="pix:write"`},
		{"no scope on a write", post(f.token(t, with(valid, "scope", nil)), own), 403, "insufficient_scope", scopeChallenge},
		{"write scope on a read", get("/accounts/acc-own", f.token(t, with(valid, "scope", auth.ScopeWrite))), 403, "insufficient_scope", `scope="pix:read"`},
		{"admin scope is not a customer's", post(adminJWT, own), 403, "insufficient_scope", scopeChallenge},
		{"POST /pix for another account", post(good, transferFor("acc-victim")), 403, "forbidden_account", scopeChallenge},
		{"POST /pix for a missing account", post(good, transferFor("acc-missing")), 403, "forbidden_account", scopeChallenge},
		{"RS256 token for another account", post(signed(t, jwt.SigningMethodRS256, rsaKeyID, f.rsa, valid), transferFor("acc-victim")), 403, "forbidden_account", scopeChallenge},
		{"GET another account", get("/accounts/acc-victim", good), 404, "account_not_found", "-"},
		{"GET a missing account", get("/accounts/acc-missing", good), 404, "account_not_found", "-"},
		{"GET another account's transfer", get("/pix/transfers/"+f.victimTransfer, good), 404, "transfer_not_found", "-"},
		{"GET a missing transfer", get("/pix/transfers/"+missingTransfer, good), 404, "transfer_not_found", "-"},
		{"GET another account's credit", get("/pix/credits/"+f.victimCredit, good), 404, "pix_credit_not_found", "-"},
		{"GET a missing credit", get("/pix/credits/"+missingCredit, good), 404, "pix_credit_not_found", "-"},
		{"GET a transfer without a token", get("/pix/transfers/"+f.ownTransfer, ""), 401, "unauthorized", `Bearer realm="pix"`},

		// The operators' routes.
		{"admin route, no token", get("/admin/reconcile", ""), 401, "unauthorized", `Bearer realm="pix"`},
		{"admin route, customer token", get("/admin/reconcile", good), 403, "insufficient_scope", `scope="pix:admin"`},
		{"admin route, wrong static token", get("/admin/reconcile", "not-the-admin-token"), 401, "unauthorized", invalidToken},
		{"admin route, expired admin token", get("/admin/reconcile", f.token(t, with(with(valid, "scope", auth.ScopeAdmin), "exp", now.Add(-time.Hour).Unix()))), 401, "unauthorized", invalidToken},
		{"admin re-drive, customer token", func() securityReply {
			return f.send(t, http.MethodPost, "/admin/pix/credits/"+f.victimCredit+"/retry", good, "", nil)
		}, 403, "insufficient_scope", scopeChallenge},
	}
	require.GreaterOrEqual(t, len(cases), 30)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := f.books(t)
			r := c.do()
			require.Equal(t, c.status, r.status, "%s", r.raw)
			require.Equal(t, c.code, r.body["error"].(map[string]any)["code"], "%s", r.raw)
			if c.challenge == "-" {
				require.Empty(t, r.header.Get("WWW-Authenticate"))
			} else {
				require.Contains(t, r.header.Get("WWW-Authenticate"), c.challenge)
				require.True(t, strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer "), r.header.Get("WWW-Authenticate"))
			}
			require.Equal(t, before, f.books(t), "a refused request changes nothing")
		})
	}

	t.Run("another account's resources look exactly missing", func(t *testing.T) {
		for _, pair := range [][2]string{
			{"/accounts/acc-victim", "/accounts/acc-missing"},
			{"/pix/transfers/" + f.victimTransfer, "/pix/transfers/" + missingTransfer},
			{"/pix/credits/" + f.victimCredit, "/pix/credits/" + missingCredit},
		} {
			other, missing := get(pair[0], good)(), get(pair[1], good)()
			require.Equal(t, missing.status, other.status)
			require.Equal(t, string(missing.raw), string(other.raw), "no existence leak")
		}
	})

	t.Run("the caller's own resources answer", func(t *testing.T) {
		require.Equal(t, http.StatusOK, get("/accounts/acc-own", good)().status)
		require.Equal(t, http.StatusOK, get("/pix/transfers/"+f.ownTransfer, good)().status)
		credit := get("/pix/credits/"+f.ownCredit, good)()
		require.Equal(t, http.StatusOK, credit.status)
		require.Nil(t, credit.body["last_error"], "why an attempt failed is the operators' business")
		require.Equal(t, http.StatusOK, get("/admin/reconcile", e2eAdminToken)().status, "the static admin token")
		require.Equal(t, http.StatusOK, get("/admin/reconcile", adminJWT)().status, "a token with scope pix:admin")
		admin := get("/admin/pix/credits/"+f.victimCredit, adminJWT)()
		require.Equal(t, http.StatusOK, admin.status, "operators see any PIX")
	})

	t.Run("Idempotency-Keys belong to their caller", func(t *testing.T) {
		key := uuid.NewString()
		alice := f.token(t, tokenFor("acc-own"))
		first := f.send(t, http.MethodPost, "/pix", alice, key, own)
		require.Equal(t, http.StatusCreated, first.status, "%s", first.raw)

		// Mallory learned Alice's key and body: he gets no replay of her
		// answer, and can't debit her account with it.
		f.s.openAccount("acc-mallory", 10_000)
		mallory := f.token(t, with(tokenFor("acc-mallory"), "sub", "mallory"))
		before := f.books(t)
		stolen := f.send(t, http.MethodPost, "/pix", mallory, key, own)
		require.Equal(t, http.StatusForbidden, stolen.status, "%s", stolen.raw)
		require.Empty(t, stolen.header.Get(api.IdempotentReplayHeader))
		require.Equal(t, before, f.books(t))

		// The same key for his own transfer is his own key: a new
		// transfer, neither a replay nor "key reused".
		his := f.send(t, http.MethodPost, "/pix", mallory, key, transferFor("acc-mallory"))
		require.Equal(t, http.StatusCreated, his.status, "%s", his.raw)
		require.Empty(t, his.header.Get(api.IdempotentReplayHeader))
		require.NotEqual(t, first.body["id"], his.body["id"])

		// Alice's retry still replays her own answer.
		again := f.send(t, http.MethodPost, "/pix", alice, key, own)
		require.Equal(t, http.StatusCreated, again.status)
		require.Equal(t, "true", again.header.Get(api.IdempotentReplayHeader))
		require.Equal(t, first.body["id"], again.body["id"])
	})
}

// ed25519Key is a key pair the issuer does not hold.
func ed25519Key() (ed25519.PublicKey, ed25519.PrivateKey, error) {
	return ed25519.GenerateKey(rand.Reader)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// e2eIssuerPublicKey is the raw public key the issuer's JWKS publishes:
// what an attacker would try as an HMAC secret.
func e2eIssuerPublicKey(t *testing.T) ed25519.PublicKey {
	t.Helper()
	b, err := os.ReadFile(e2eJWKSFile)
	require.NoError(t, err)
	var set jose.JSONWebKeySet
	require.NoError(t, json.Unmarshal(b, &set))
	pub, ok := set.Keys[0].Key.(ed25519.PublicKey)
	require.True(t, ok)
	return pub
}
