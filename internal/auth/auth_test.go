package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/pixbank/pix/internal/auth"
)

const (
	testIssuer   = "https://idp.pixbank.test"
	testAudience = "pix-api"
)

var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// clock is an injectable Now, shared by a KeyCache and its Verifier.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: t0} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// RSA keys are slow to generate: one of each size per test binary.
var (
	rsaKey     = sync.OnceValue(func() *rsa.PrivateKey { return mustRSA(2048) })
	rsaWeakKey = sync.OnceValue(func() *rsa.PrivateKey { return mustRSA(1024) })
)

func mustRSA(bits int) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		panic(err)
	}
	return k
}

// signer is one key of the issuer: what signs tokens, and its JWK.
type signer struct {
	kid    string
	method jwt.SigningMethod
	priv   any
	pub    any
	alg    string // the alg the JWKS pins the key to; "" for none
}

func (s signer) jwk() testJWK {
	return testJWK{Key: s.pub, KeyID: s.kid, Algorithm: s.alg, Use: "sig"}
}

// unpinned is s under another kid, its JWK pinning no algorithm.
func (s signer) unpinned(kid string) signer {
	s.kid, s.alg = kid, ""
	return s
}

func rsaSigner(kid string) signer {
	k := rsaKey()
	return signer{kid: kid, method: jwt.SigningMethodRS256, priv: k, pub: &k.PublicKey, alg: "RS256"}
}

func ecSigner(t testing.TB, kid string) signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signer{kid: kid, method: jwt.SigningMethodES256, priv: k, pub: &k.PublicKey, alg: "ES256"}
}

func edSigner(t testing.TB, kid string) signer {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signer{kid: kid, method: jwt.SigningMethodEdDSA, priv: priv, pub: pub, alg: "EdDSA"}
}

// testJWK is a JWK as a test writes it: any key, private and symmetric
// ones included (an issuer's mistakes the verifier must refuse), with the
// kid, alg and use given, "" for none.
type testJWK struct {
	Key                   any
	KeyID, Algorithm, Use string
}

func (k testJWK) MarshalJSON() ([]byte, error) {
	j, err := jwkset.NewJWKFromKey(k.Key, jwkset.JWKOptions{
		Marshal:  jwkset.JWKMarshalOptions{Private: true},
		Validate: jwkset.JWKValidateOptions{SkipAll: true},
	})
	if err != nil {
		return nil, err
	}
	m := j.Marshal()
	m.KID, m.ALG, m.USE = k.KeyID, jwkset.ALG(k.Algorithm), jwkset.USE(k.Use)
	return json.Marshal(m)
}

func jwksOf(t testing.TB, keys ...testJWK) []byte {
	t.Helper()
	b, err := json.Marshal(struct {
		Keys []testJWK `json:"keys"`
	}{keys})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jwksRaw is a JWKS document of the JSON keys given as they are.
func jwksRaw(keys ...string) []byte {
	return []byte(`{"keys":[` + strings.Join(keys, ",") + `]}`)
}

func jwkJSON(t testing.TB, k testJWK) string {
	t.Helper()
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// memSource is a KeySource whose document, error and latency the test
// controls, and which counts its reads.
type memSource struct {
	mu      sync.Mutex
	doc     []byte
	err     error
	reads   int
	gate    chan struct{} // non-nil: a read waits for it to close
	entered chan struct{} // a read that waits on gate says so here
}

func newMemSource(doc []byte) *memSource {
	return &memSource{doc: doc, entered: make(chan struct{}, 100)}
}

func (s *memSource) set(doc []byte, err error) {
	s.mu.Lock()
	s.doc, s.err = doc, err
	s.mu.Unlock()
}

func (s *memSource) block() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate = make(chan struct{})
	return s.gate
}

func (s *memSource) readCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

func (s *memSource) read(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	s.reads++
	doc, err, gate := s.doc, s.err, s.gate
	s.mu.Unlock()
	if gate != nil {
		s.entered <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return doc, err
}

// fixture is a verifier of the test issuer, its clock and key source.
type fixture struct {
	clock *clock
	src   *memSource
	keys  *auth.KeyCache
	v     *auth.Verifier
}

func newFixture(t testing.TB, o auth.KeyCacheOptions, doc []byte) *fixture {
	t.Helper()
	f := &fixture{clock: newClock(), src: newMemSource(doc)}
	o.Now = f.clock.Now
	keys, err := auth.NewKeyCache(context.Background(), f.src.read, o)
	if err != nil {
		t.Fatalf("NewKeyCache: %v", err)
	}
	f.keys = keys
	f.v = auth.NewVerifier(testIssuer, testAudience, keys, f.clock.Now)
	return f
}

func claimsAt(now time.Time) jwt.MapClaims {
	return jwt.MapClaims{
		"iss":      testIssuer,
		"aud":      []string{testAudience},
		"sub":      "customer-42",
		"iat":      now.Unix(),
		"nbf":      now.Unix(),
		"exp":      now.Add(5 * time.Minute).Unix(),
		"scope":    "pix:read pix:write",
		"accounts": []string{"acc-1", "acc-2"},
	}
}

// sign signs c with s, the header naming s's kid.
func sign(t testing.TB, s signer, c jwt.MapClaims) string {
	t.Helper()
	return signAs(t, s.method, s.priv, map[string]any{"kid": s.kid}, c)
}

// signAs signs c with method and key, the header holding hdr too.
func signAs(t testing.TB, method jwt.SigningMethod, key any, hdr map[string]any, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	for k, v := range hdr {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign %s: %v", method.Alg(), err)
	}
	return s
}

func b64(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// rawToken is a token assembled by hand: header and claims as given, and
// sig as its signature.
func rawToken(hdr map[string]any, c jwt.MapClaims, sig []byte) string {
	return b64(hdr) + "." + b64(c) + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func wantCaller(t *testing.T, c auth.Caller, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("Verify: %v, want the token accepted", err)
	}
	if c.Subject != "customer-42" || !slices.Equal(c.Scopes, []string{"pix:read", "pix:write"}) ||
		!slices.Equal(c.Accounts, []string{"acc-1", "acc-2"}) {
		t.Fatalf("caller = %+v", c)
	}
}

// wantRefused checks err is a *TokenError (401) whose reason says reason.
func wantRefused(t *testing.T, err error, reason string) {
	t.Helper()
	var te *auth.TokenError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v (%T), want *auth.TokenError", err, err)
	}
	if errors.Is(err, auth.ErrKeysUnavailable) {
		t.Fatalf("err = %v is ErrKeysUnavailable, want a refused token", err)
	}
	if !strings.Contains(te.Reason, reason) {
		t.Fatalf("reason = %q, want it to contain %q", te.Reason, reason)
	}
	if !strings.HasPrefix(te.Error(), "invalid bearer token: "+te.Reason) {
		t.Fatalf("Error() = %q", te.Error())
	}
}

func wantUnavailable(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, auth.ErrKeysUnavailable) {
		t.Fatalf("err = %v (%T), want ErrKeysUnavailable", err, err)
	}
	var te *auth.TokenError
	if errors.As(err, &te) {
		t.Fatalf("err = %v is a *TokenError too", err)
	}
}

const (
	reasonKid       = "unknown kid"
	reasonSignature = "signature"
	reasonMalformed = "malformed"
)

// The issuer's keys in most tests: one of each algorithm pinned, and the
// RSA and Ed25519 keys again under kids that pin no algorithm.
type issuerKeys struct {
	rsa, ec, ed, rsaAny, edAny signer
}

func newIssuerKeys(t testing.TB) issuerKeys {
	k := issuerKeys{rsa: rsaSigner("rsa-1"), ec: ecSigner(t, "ec-1"), ed: edSigner(t, "ed-1")}
	k.rsaAny, k.edAny = k.rsa.unpinned("rsa-any"), k.ed.unpinned("ed-any")
	return k
}

func (k issuerKeys) jwks(t testing.TB) []byte {
	return jwksOf(t, k.rsa.jwk(), k.ec.jwk(), k.ed.jwk(), k.rsaAny.jwk(), k.edAny.jwk())
}

// ---------------------------------------------------------------------------
// Valid tokens

func TestVerifyDevIssuerEdDSA(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	iss, err := auth.OpenDevIssuer(dir, testIssuer, testAudience)
	if err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	keys, err := auth.NewKeyCache(context.Background(), auth.FileKeys(filepath.Join(dir, auth.DevJWKSFile)), auth.KeyCacheOptions{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	v := auth.NewVerifier(testIssuer, testAudience, keys, clk.Now)
	tok, err := iss.Mint(auth.TokenSpec{Subject: "customer-42", Scopes: []string{"pix:read", "pix:write"},
		Accounts: []string{"acc-1", "acc-2"}, TTL: time.Minute}, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	hdr, _, _ := strings.Cut(tok, ".")
	if b, _ := base64.RawURLEncoding.DecodeString(hdr); !strings.Contains(string(b), `"alg":"EdDSA"`) {
		t.Fatalf("header = %s", b)
	}
	c, err := v.Verify(context.Background(), tok)
	wantCaller(t, c, err)

	// Reopened, the issuer keeps its key: its tokens still verify.
	again, err := auth.OpenDevIssuer(dir, testIssuer, testAudience)
	if err != nil {
		t.Fatal(err)
	}
	tok2, err := again.Mint(auth.TokenSpec{Subject: "customer-42", Scopes: []string{"pix:read", "pix:write"},
		Accounts: []string{"acc-1", "acc-2"}, TTL: time.Minute}, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	c, err = v.Verify(context.Background(), tok2)
	wantCaller(t, c, err)

	// Expired after its TTL (and the leeway).
	clk.Advance(time.Minute + auth.Leeway + time.Second)
	_, err = v.Verify(context.Background(), tok)
	wantRefused(t, err, "expired")

	if st, err := os.Stat(filepath.Join(dir, "issuer-key.pem")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("private key file: %v, %v", st, err)
	}
}

func TestMintRefusesIncompleteSpec(t *testing.T) {
	t.Parallel()
	iss, err := auth.OpenDevIssuer(t.TempDir(), testIssuer, testAudience)
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []auth.TokenSpec{{TTL: time.Minute}, {Subject: "s"}, {Subject: "s", TTL: -time.Second},
		{Subject: auth.AdminToken.Subject, TTL: time.Minute}} {
		if _, err := iss.Mint(spec, t0); err == nil {
			t.Errorf("Mint(%+v) succeeded", spec)
		}
	}
}

func TestOpenDevIssuerRefusesABadKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "issuer-key.pem"), []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.OpenDevIssuer(dir, testIssuer, testAudience); err == nil {
		t.Fatal("OpenDevIssuer accepted a key file that holds no PEM block")
	}
}

func TestVerifyAlgorithms(t *testing.T) {
	t.Parallel()
	k := newIssuerKeys(t)
	f := newFixture(t, auth.KeyCacheOptions{}, k.jwks(t))
	for _, s := range []signer{k.rsa, k.ec, k.ed, k.rsaAny, k.edAny} {
		t.Run(s.method.Alg()+"/"+s.kid, func(t *testing.T) {
			c, err := f.v.Verify(context.Background(), sign(t, s, claimsAt(f.clock.Now())))
			wantCaller(t, c, err)
		})
	}
	// The JWKS helper of the package pins Ed25519 keys only.
	doc, err := auth.JWKS("rsa-helper", &rsaKey().PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	g := newFixture(t, auth.KeyCacheOptions{}, doc)
	c, err := g.v.Verify(context.Background(), sign(t, rsaSigner("rsa-helper"), claimsAt(g.clock.Now())))
	wantCaller(t, c, err)
}

// ---------------------------------------------------------------------------
// Claims

func TestVerifyClaims(t *testing.T) {
	t.Parallel()
	ec := ecSigner(t, "ec-1")
	f := newFixture(t, auth.KeyCacheOptions{}, jwksOf(t, ec.jwk()))
	now := f.clock.Now()
	unix := func(d time.Duration) int64 { return now.Add(d).Unix() }
	tests := []struct {
		name   string
		edit   func(jwt.MapClaims)
		reason string // "" for accepted
	}{
		{"valid", func(jwt.MapClaims) {}, ""},
		{"expired", func(c jwt.MapClaims) { c["exp"] = unix(-2 * time.Minute) }, "expired"},
		{"expired at the leeway's edge", func(c jwt.MapClaims) { c["exp"] = unix(-auth.Leeway) }, "expired"},
		{"expired within leeway", func(c jwt.MapClaims) { c["exp"] = unix(-30 * time.Second) }, ""},
		{"nbf in the future beyond leeway", func(c jwt.MapClaims) { c["nbf"] = unix(2 * time.Minute) }, "not valid yet"},
		{"nbf in the future within leeway", func(c jwt.MapClaims) { c["nbf"] = unix(30 * time.Second) }, ""},
		{"iat in the future beyond leeway", func(c jwt.MapClaims) { c["iat"] = unix(2 * time.Minute) }, "issued in the future"},
		{"iat in the future within leeway", func(c jwt.MapClaims) { c["iat"] = unix(30 * time.Second) }, ""},
		{"no nbf, no iat", func(c jwt.MapClaims) { delete(c, "nbf"); delete(c, "iat") }, ""},
		{"no exp", func(c jwt.MapClaims) { delete(c, "exp") }, "required claim"},
		{"exp not a number", func(c jwt.MapClaims) { c["exp"] = "tomorrow" }, reasonMalformed},
		{"wrong iss", func(c jwt.MapClaims) { c["iss"] = "https://evil.test" }, "issuer"},
		{"iss with a trailing slash", func(c jwt.MapClaims) { c["iss"] = testIssuer + "/" }, "issuer"},
		{"missing iss", func(c jwt.MapClaims) { delete(c, "iss") }, "required claim"},
		{"empty iss", func(c jwt.MapClaims) { c["iss"] = "" }, "required claim"},
		{"aud as a string", func(c jwt.MapClaims) { c["aud"] = testAudience }, ""},
		{"aud list without ours", func(c jwt.MapClaims) { c["aud"] = []string{"other-api", "pix-api-2"} }, "audience"},
		{"aud list with ours among others", func(c jwt.MapClaims) { c["aud"] = []string{"other-api", testAudience, "x"} }, ""},
		{"aud differing in case", func(c jwt.MapClaims) { c["aud"] = []string{"PIX-API"} }, "audience"},
		{"missing aud", func(c jwt.MapClaims) { delete(c, "aud") }, "required claim"},
		{"empty aud list", func(c jwt.MapClaims) { c["aud"] = []string{} }, "required claim"},
		{"sub empty", func(c jwt.MapClaims) { c["sub"] = "" }, "subject"},
		{"sub missing", func(c jwt.MapClaims) { delete(c, "sub") }, "subject"},
		{"sub not a string", func(c jwt.MapClaims) { c["sub"] = 42 }, reasonMalformed},
		// The subjects of the callers no token names: a token can't pass
		// for ADMIN_TOKEN's caller (its Idempotency-Keys), in any case.
		{"sub of ADMIN_TOKEN's caller", func(c jwt.MapClaims) { c["sub"] = auth.AdminToken.Subject }, "reserved"},
		{"sub of the unauthenticated caller", func(c jwt.MapClaims) { c["sub"] = auth.Unauthenticated.Subject }, "reserved"},
		{"sub under the reserved prefix, upper case", func(c jwt.MapClaims) { c["sub"] = "PIX:admin-token" }, "reserved"},
		{"scope as a list", func(c jwt.MapClaims) { c["scope"] = []string{"pix:admin"} }, reasonMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := claimsAt(now)
			tt.edit(c)
			caller, err := f.v.Verify(context.Background(), sign(t, ec, c))
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if caller.Subject != "customer-42" {
					t.Fatalf("caller = %+v", caller)
				}
				return
			}
			wantRefused(t, err, tt.reason)
			if caller.Subject != "" || caller.HasScope(auth.ScopeRead) {
				t.Fatalf("refused, yet caller = %+v", caller)
			}
		})
	}
}

func TestVerifyWithoutScopesOrAccounts(t *testing.T) {
	t.Parallel()
	ec := ecSigner(t, "ec-1")
	f := newFixture(t, auth.KeyCacheOptions{}, jwksOf(t, ec.jwk()))
	c := claimsAt(f.clock.Now())
	delete(c, "scope")
	delete(c, "accounts")
	caller, err := f.v.Verify(context.Background(), sign(t, ec, c))
	if err != nil {
		t.Fatal(err)
	}
	if caller.HasScope(auth.ScopeRead) || caller.MayActFor("acc-1") {
		t.Fatalf("caller = %+v may do something", caller)
	}
}

// ---------------------------------------------------------------------------
// Forged and malformed tokens

func TestVerifyRefusesForgedTokens(t *testing.T) {
	t.Parallel()
	k := newIssuerKeys(t)
	f := newFixture(t, auth.KeyCacheOptions{}, k.jwks(t))
	c := claimsAt(f.clock.Now())
	rsaPub := &rsaKey().PublicKey
	pkix, err := x509.MarshalPKIXPublicKey(rsaPub)
	if err != nil {
		t.Fatal(err)
	}
	pemPKIX := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pkix})
	pemPKCS1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(rsaPub)})
	edPub := []byte(k.ed.pub.(ed25519.PublicKey))
	rsaJWK := []byte(jwkJSON(t, k.rsa.jwk()))
	otherEC := ecSigner(t, "ec-1") // same kid, not the issuer's key
	good := sign(t, k.ec, c)
	goodParts := strings.Split(good, ".")

	tests := []struct {
		name   string
		token  string
		reason string
	}{
		{"alg none", signAs(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, map[string]any{"kid": "rsa-1"}, c), reasonSignature},
		{"alg None", rawToken(map[string]any{"alg": "None", "typ": "JWT", "kid": "rsa-1"}, c, nil), reasonSignature},
		{"alg NONE with a signature", rawToken(map[string]any{"alg": "NONE", "kid": "ed-1"}, c, []byte("x")), reasonSignature},
		{"alg empty", rawToken(map[string]any{"alg": "", "kid": "ed-1"}, c, []byte("x")), reasonSignature},
		{"alg missing", rawToken(map[string]any{"kid": "ed-1"}, c, []byte("x")), reasonSignature},
		{"alg not a string", rawToken(map[string]any{"alg": []string{"RS256"}, "kid": "rsa-1"}, c, []byte("x")), reasonSignature},
		{"HS256 with the RSA public key's PEM (PKIX)", signAs(t, jwt.SigningMethodHS256, pemPKIX, map[string]any{"kid": "rsa-1"}, c), reasonSignature},
		{"HS256 with the RSA public key's PEM, unpinned kid", signAs(t, jwt.SigningMethodHS256, pemPKIX, map[string]any{"kid": "rsa-any"}, c), reasonSignature},
		{"HS256 with the RSA public key's PEM (PKCS1)", signAs(t, jwt.SigningMethodHS256, pemPKCS1, map[string]any{"kid": "rsa-any"}, c), reasonSignature},
		{"HS256 with the RSA public key's DER", signAs(t, jwt.SigningMethodHS256, pkix, map[string]any{"kid": "rsa-any"}, c), reasonSignature},
		{"HS256 with the RSA JWK bytes", signAs(t, jwt.SigningMethodHS256, rsaJWK, map[string]any{"kid": "rsa-any"}, c), reasonSignature},
		{"HS256 with the Ed25519 public key bytes", signAs(t, jwt.SigningMethodHS256, edPub, map[string]any{"kid": "ed-1"}, c), reasonSignature},
		{"HS256 with the Ed25519 public key bytes, unpinned kid", signAs(t, jwt.SigningMethodHS256, edPub, map[string]any{"kid": "ed-any"}, c), reasonSignature},
		{"HS384 with the Ed25519 public key bytes", signAs(t, jwt.SigningMethodHS384, edPub, map[string]any{"kid": "ed-any"}, c), reasonSignature},
		{"HS512 with the RSA public key's PEM", signAs(t, jwt.SigningMethodHS512, pemPKIX, map[string]any{"kid": "rsa-any"}, c), reasonSignature},
		{"HS256 without kid", signAs(t, jwt.SigningMethodHS256, edPub, nil, c), reasonSignature},
		{"RS256 header on an Ed25519 kid (pinned)", signAs(t, jwt.SigningMethodRS256, rsaKey(), map[string]any{"kid": "ed-1"}, c), reasonSignature},
		{"RS256 header on an Ed25519 kid (unpinned)", signAs(t, jwt.SigningMethodRS256, rsaKey(), map[string]any{"kid": "ed-any"}, c), reasonSignature},
		{"ES256 header on an RSA kid (unpinned)", signAs(t, jwt.SigningMethodES256, otherEC.priv, map[string]any{"kid": "rsa-any"}, c), reasonSignature},
		{"EdDSA header on an EC kid", signAs(t, jwt.SigningMethodEdDSA, k.ed.priv, map[string]any{"kid": "ec-1"}, c), reasonSignature},
		{"PS256 on a key pinned to RS256", signAs(t, jwt.SigningMethodPS256, rsaKey(), map[string]any{"kid": "rsa-1"}, c), reasonSignature},
		{"RS512 on a key pinned to RS256", signAs(t, jwt.SigningMethodRS512, rsaKey(), map[string]any{"kid": "rsa-1"}, c), reasonSignature},
		{"PS256 on an unpinned RSA key", signAs(t, jwt.SigningMethodPS256, rsaKey(), map[string]any{"kid": "rsa-any"}, c), reasonSignature},
		{"RS384 on an unpinned RSA key", signAs(t, jwt.SigningMethodRS384, rsaKey(), map[string]any{"kid": "rsa-any"}, c), reasonSignature},
		{"ES384 header", rawToken(map[string]any{"alg": "ES384", "kid": "ec-1"}, c, make([]byte, 96)), reasonSignature},
		{"unknown kid", signAs(t, k.ec.method, k.ec.priv, map[string]any{"kid": "ec-2"}, c), reasonKid},
		{"missing kid", signAs(t, k.ec.method, k.ec.priv, nil, c), reasonKid},
		{"empty kid", signAs(t, k.ec.method, k.ec.priv, map[string]any{"kid": ""}, c), reasonKid},
		{"kid a number", signAs(t, k.ec.method, k.ec.priv, map[string]any{"kid": 1}, c), reasonKid},
		{"kid an object", signAs(t, k.ec.method, k.ec.priv, map[string]any{"kid": map[string]any{"ec-1": true}}, c), reasonKid},
		{"kid a list", signAs(t, k.ec.method, k.ec.priv, map[string]any{"kid": []string{"ec-1"}}, c), reasonKid},
		{"kid null", signAs(t, k.ec.method, k.ec.priv, map[string]any{"kid": nil}, c), reasonKid},
		{"kid of another key type", signAs(t, k.ec.method, k.ec.priv, map[string]any{"kid": "rsa-1"}, c), reasonSignature},
		{"right kid, another key", sign(t, otherEC, c), reasonSignature},
		{"tampered payload (sub)", goodParts[0] + "." + b64(func() jwt.MapClaims { d := claimsAt(f.clock.Now()); d["sub"] = "admin"; return d }()) + "." + goodParts[2], reasonSignature},
		{"tampered payload (scope)", goodParts[0] + "." + b64(func() jwt.MapClaims { d := claimsAt(f.clock.Now()); d["scope"] = "pix:admin"; return d }()) + "." + goodParts[2], reasonSignature},
		{"tampered header (kid)", b64(map[string]any{"alg": "ES256", "kid": "ec-1", "typ": "JWT", "x": 1}) + "." + goodParts[1] + "." + goodParts[2], reasonSignature},
		{"signature stripped", goodParts[0] + "." + goodParts[1] + ".", reasonSignature},
		{"signature padded", good + "==", reasonMalformed},
		{"signature truncated", good[:len(good)-4], ""}, // malformed or not valid: either way refused
		{"header not JSON", "bm90IGpzb24." + goodParts[1] + "." + goodParts[2], reasonMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			caller, err := f.v.Verify(context.Background(), tt.token)
			wantRefused(t, err, tt.reason)
			if caller.Subject != "" {
				t.Fatalf("refused, yet caller = %+v", caller)
			}
		})
	}
}

func TestVerifyGarbage(t *testing.T) {
	t.Parallel()
	k := newIssuerKeys(t)
	f := newFixture(t, auth.KeyCacheOptions{}, k.jwks(t))
	for _, s := range []string{
		"", " ", ".", "..", "...", "a", "a.b", "a.b.c", "a.b.c.d", "....", "Bearer x",
		"eyJ", "eyJhbGciOiJFUzI1NiJ9", "eyJhbGciOiJFUzI1NiJ9..", "eyJhbGciOiJFUzI1NiJ9.e30.",
		"W10.e30.", "bnVsbA.bnVsbA.", "e30.W10.", "eyJ9.eyJ9.eyJ9",
		"\x00\x01\x02.\xff\xfe.\x80", "ünïcødé.ü.ü", strings.Repeat(".", 10000),
		strings.Repeat("A", 100000), strings.Repeat("a.", 50000),
		b64(map[string]any{"alg": "ES256", "kid": "ec-1"}) + "." + b64("a string") + ".AAAA",
		b64(map[string]any{"alg": "ES256", "kid": "ec-1"}) + "." + b64([]int{1}) + ".AAAA",
		b64(map[string]any{"alg": "ES256", "kid": "ec-1"}) + ".e30.!!!!",
	} {
		caller, err := f.v.Verify(context.Background(), s)
		var te *auth.TokenError
		if !errors.As(err, &te) || caller.Subject != "" {
			t.Errorf("Verify(%.40q) = %+v, %v; want a *TokenError", s, caller, err)
		}
	}
}

func TestVerifyHugeToken(t *testing.T) {
	t.Parallel()
	ec := ecSigner(t, "ec-1")
	f := newFixture(t, auth.KeyCacheOptions{}, jwksOf(t, ec.jwk()))
	c := claimsAt(f.clock.Now())
	c["pad"] = strings.Repeat("x", 1<<20)
	c["aud"] = append(slices.Repeat([]string{"other"}, 50000), testAudience)
	tok := sign(t, ec, c)
	tampered := tok[:len(tok)-8] + "AAAAAAAA"
	_, err := f.v.Verify(context.Background(), tampered)
	wantRefused(t, err, reasonSignature)
	// Deeply nested JSON in the header.
	deep := base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("[", 100000)))
	_, err = f.v.Verify(context.Background(), deep+".e30.AAAA")
	wantRefused(t, err, reasonMalformed)
}

// BenchmarkVerifyHugeToken is the cost of refusing a tampered 1 MiB token
// with 50,000 audiences: the speed bound TestVerifyHugeToken once asserted
// with a wall clock (2 s), which a loaded machine broke. Speed targets live
// in benchmarks (docs/benchmarks.md), never in timed assertions.
func BenchmarkVerifyHugeToken(b *testing.B) {
	ec := ecSigner(b, "ec-1")
	f := newFixture(b, auth.KeyCacheOptions{}, jwksOf(b, ec.jwk()))
	c := claimsAt(f.clock.Now())
	c["pad"] = strings.Repeat("x", 1<<20)
	c["aud"] = append(slices.Repeat([]string{"other"}, 50000), testAudience)
	tok := sign(b, ec, c)
	tampered := tok[:len(tok)-8] + "AAAAAAAA"
	b.SetBytes(int64(len(tampered)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.v.Verify(context.Background(), tampered); err == nil {
			b.Fatal("a tampered token was accepted")
		}
	}
}

// ---------------------------------------------------------------------------
// JWKS parsing

func TestJWKSSkipsUnusableKeys(t *testing.T) {
	t.Parallel()
	good := ecSigner(t, "good")
	weak := rsaWeakKey()
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ed := edSigner(t, "x")
	ec := ecSigner(t, "x")
	secret := []byte("0123456789abcdef0123456789abcdef")
	tests := []struct {
		name  string
		jwk   testJWK
		token func(kid string, c jwt.MapClaims) string
	}{
		{"RSA 1024 bits", testJWK{Key: &weak.PublicKey, KeyID: "weak", Algorithm: "RS256", Use: "sig"},
			func(kid string, c jwt.MapClaims) string {
				return signAs(t, jwt.SigningMethodRS256, weak, map[string]any{"kid": kid}, c)
			}},
		{"EC P-384", testJWK{Key: &p384.PublicKey, KeyID: "p384", Use: "sig"},
			func(kid string, c jwt.MapClaims) string {
				return signAs(t, jwt.SigningMethodES384, p384, map[string]any{"kid": kid}, c)
			}},
		{"use enc", testJWK{Key: ed.pub, KeyID: "enc", Use: "enc"},
			func(kid string, c jwt.MapClaims) string {
				return signAs(t, jwt.SigningMethodEdDSA, ed.priv, map[string]any{"kid": kid}, c)
			}},
		{"private Ed25519 key", testJWK{Key: ed.priv, KeyID: "ed-private", Use: "sig"},
			func(kid string, c jwt.MapClaims) string {
				return signAs(t, jwt.SigningMethodEdDSA, ed.priv, map[string]any{"kid": kid}, c)
			}},
		{"private EC key", testJWK{Key: ec.priv, KeyID: "ec-private", Use: "sig"},
			func(kid string, c jwt.MapClaims) string {
				return signAs(t, jwt.SigningMethodES256, ec.priv, map[string]any{"kid": kid}, c)
			}},
		{"symmetric key", testJWK{Key: secret, KeyID: "oct", Use: "sig"},
			func(kid string, c jwt.MapClaims) string {
				return signAs(t, jwt.SigningMethodHS256, secret, map[string]any{"kid": kid}, c)
			}},
		{"no kid", testJWK{Key: ed.pub, Use: "sig"},
			func(string, jwt.MapClaims) string { return "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, auth.KeyCacheOptions{}, jwksOf(t, tt.jwk, good.jwk()))
			c := claimsAt(f.clock.Now())
			if tok := tt.token(tt.jwk.KeyID, c); tok != "" {
				_, err := f.v.Verify(context.Background(), tok)
				var te *auth.TokenError
				if !errors.As(err, &te) {
					t.Fatalf("a token of the skipped key: %v, want a *TokenError", err)
				}
			}
			// The usable key of the same document serves.
			if _, err := f.v.Verify(context.Background(), sign(t, good, c)); err != nil {
				t.Fatalf("the usable key: %v", err)
			}
			// Alone in a document, the key leaves no usable key.
			if _, err := auth.NewKeyCache(context.Background(), newMemSource(jwksOf(t, tt.jwk)).read, auth.KeyCacheOptions{}); err == nil {
				t.Fatal("NewKeyCache accepted a JWKS of an unusable key only")
			}
		})
	}
}

func TestNewKeyCacheFails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  auth.KeySource
	}{
		{"not JSON", newMemSource([]byte("<html>")).read},
		{"empty", newMemSource(nil).read},
		{"a JSON array", newMemSource([]byte(`[]`)).read},
		{"no keys member", newMemSource([]byte(`{}`)).read},
		{"no keys", newMemSource([]byte(`{"keys":[]}`)).read},
		{"keys not a list", newMemSource([]byte(`{"keys":{"kty":"RSA"}}`)).read},
		{"only a weak RSA key", newMemSource(jwksOf(t, testJWK{Key: &rsaWeakKey().PublicKey, KeyID: "weak"})).read},
		{"a source error", func(context.Context) ([]byte, error) { return nil, errors.New("boom") }},
		{"a missing file", auth.FileKeys(filepath.Join(t.TempDir(), "none.json"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := auth.NewKeyCache(context.Background(), tt.src, auth.KeyCacheOptions{})
			if err == nil || k != nil {
				t.Fatalf("NewKeyCache = %v, %v; want an error", k, err)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Key refresh

func TestKeyRotationViaFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "jwks.json")
	a, b := ecSigner(t, "key-a"), edSigner(t, "key-b")
	if err := os.WriteFile(path, jwksOf(t, a.jwk()), 0o644); err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	keys, err := auth.NewKeyCache(context.Background(), auth.FileKeys(path), auth.KeyCacheOptions{MinRefresh: 30 * time.Second, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	v := auth.NewVerifier(testIssuer, testAudience, keys, clk.Now)

	// The issuer rotates in key b.
	if err := os.WriteFile(path, jwksOf(t, a.jwk(), b.jwk()), 0o644); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * time.Second)
	_, err = v.Verify(context.Background(), sign(t, b, claimsAt(clk.Now())))
	wantRefused(t, err, reasonKid) // within MinRefresh of the last read

	clk.Advance(21 * time.Second)
	c, err := v.Verify(context.Background(), sign(t, b, claimsAt(clk.Now())))
	wantCaller(t, c, err)
	c, err = v.Verify(context.Background(), sign(t, a, claimsAt(clk.Now())))
	wantCaller(t, c, err)
}

func TestRefreshIsRateLimited(t *testing.T) {
	t.Parallel()
	ec := ecSigner(t, "ec-1")
	f := newFixture(t, auth.KeyCacheOptions{MinRefresh: 30 * time.Second}, jwksOf(t, ec.jwk()))
	unknown := signAs(t, ec.method, ec.priv, map[string]any{"kid": "made-up"}, claimsAt(f.clock.Now()))
	if n := f.src.readCount(); n != 1 {
		t.Fatalf("reads after NewKeyCache = %d, want 1", n)
	}
	for range 5 {
		_, err := f.v.Verify(context.Background(), unknown)
		wantRefused(t, err, reasonKid)
	}
	if n := f.src.readCount(); n != 1 {
		t.Fatalf("reads = %d: an unknown kid within MinRefresh of the first read read again", n)
	}
	f.clock.Advance(31 * time.Second)
	for range 2 {
		_, err := f.v.Verify(context.Background(), unknown)
		wantRefused(t, err, reasonKid)
	}
	if n := f.src.readCount(); n != 2 {
		t.Fatalf("reads = %d after an unknown kid twice past MinRefresh, want 2", n)
	}
	// Known keys never read.
	for range 5 {
		if _, err := f.v.Verify(context.Background(), sign(t, ec, claimsAt(f.clock.Now()))); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.src.readCount(); n != 2 {
		t.Fatalf("reads = %d, want 2", n)
	}
}

func TestRemovedKeyRefusedAfterMaxAge(t *testing.T) {
	t.Parallel()
	a, b := ecSigner(t, "key-a"), edSigner(t, "key-b")
	f := newFixture(t, auth.KeyCacheOptions{MinRefresh: 30 * time.Second, MaxAge: 10 * time.Minute}, jwksOf(t, a.jwk(), b.jwk()))
	f.src.set(jwksOf(t, a.jwk()), nil) // the issuer removes key b

	f.clock.Advance(9 * time.Minute)
	c, err := f.v.Verify(context.Background(), sign(t, b, claimsAt(f.clock.Now())))
	wantCaller(t, c, err) // younger than MaxAge: not read again
	if n := f.src.readCount(); n != 1 {
		t.Fatalf("reads = %d, want 1", n)
	}

	f.clock.Advance(time.Minute)
	_, err = f.v.Verify(context.Background(), sign(t, b, claimsAt(f.clock.Now())))
	wantRefused(t, err, reasonKid)
	c, err = f.v.Verify(context.Background(), sign(t, a, claimsAt(f.clock.Now())))
	wantCaller(t, c, err)
	if n := f.src.readCount(); n != 2 {
		t.Fatalf("reads = %d, want 2", n)
	}
}

func TestStaleKeyKeptWhenTheSourceFails(t *testing.T) {
	t.Parallel()
	a := ecSigner(t, "key-a")
	f := newFixture(t, auth.KeyCacheOptions{MinRefresh: 30 * time.Second, MaxAge: time.Minute}, jwksOf(t, a.jwk()))
	f.src.set(nil, errors.New("connection refused"))
	f.clock.Advance(2 * time.Minute)
	// A failed read keeps what was read last (documented behaviour).
	c, err := f.v.Verify(context.Background(), sign(t, a, claimsAt(f.clock.Now())))
	wantCaller(t, c, err)
	c, err = f.v.Verify(context.Background(), sign(t, a, claimsAt(f.clock.Now())))
	wantCaller(t, c, err)
	if n := f.src.readCount(); n != 2 {
		t.Fatalf("reads = %d, want 2 (one retry per MinRefresh)", n)
	}
}

// Keeping us from reading the issuer can't keep a key alive forever: past
// MaxStale the keys held serve no more (503, not a silent trust).
func TestStaleKeysExpireAfterMaxStale(t *testing.T) {
	t.Parallel()
	a := ecSigner(t, "key-a")
	f := newFixture(t, auth.KeyCacheOptions{MinRefresh: 30 * time.Second, MaxAge: time.Minute, MaxStale: 10 * time.Minute}, jwksOf(t, a.jwk()))
	f.src.set(nil, errors.New("connection refused"))
	f.clock.Advance(9 * time.Minute)
	c, err := f.v.Verify(context.Background(), sign(t, a, claimsAt(f.clock.Now())))
	wantCaller(t, c, err)
	f.clock.Advance(2 * time.Minute)
	_, err = f.v.Verify(context.Background(), sign(t, a, claimsAt(f.clock.Now())))
	if !errors.Is(err, auth.ErrKeysUnavailable) {
		t.Fatalf("past MaxStale: err = %v, want ErrKeysUnavailable", err)
	}
	f.src.set(jwksOf(t, a.jwk()), nil)
	f.clock.Advance(time.Minute)
	c, err = f.v.Verify(context.Background(), sign(t, a, claimsAt(f.clock.Now())))
	wantCaller(t, c, err)
}

// ---------------------------------------------------------------------------
// JWKS URL

// jwksServer serves the document in doc (status in status, 200 if 0).
type jwksServer struct {
	*httptest.Server
	doc    atomic.Pointer[[]byte]
	status atomic.Int32
	delay  atomic.Int64 // ns
	hits   atomic.Int32
	accept atomic.Pointer[string]
}

func newJWKSServer(t *testing.T, doc []byte) *jwksServer {
	s := &jwksServer{}
	s.doc.Store(&doc)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		a := r.Header.Get("Accept")
		s.accept.Store(&a)
		if d := time.Duration(s.delay.Load()); d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		if st := s.status.Load(); st != 0 {
			w.WriteHeader(int(st))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*s.doc.Load())
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(doc []byte) { s.doc.Store(&doc) }

func TestURLKeys(t *testing.T) {
	t.Parallel()
	a, b := ecSigner(t, "key-a"), rsaSigner("key-b")

	t.Run("200", func(t *testing.T) {
		srv := newJWKSServer(t, jwksOf(t, a.jwk()))
		clk := newClock()
		keys, err := auth.NewKeyCache(context.Background(), auth.URLKeys(srv.URL, nil), auth.KeyCacheOptions{Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		if got := *srv.accept.Load(); got != "application/json" {
			t.Errorf("Accept = %q", got)
		}
		v := auth.NewVerifier(testIssuer, testAudience, keys, clk.Now)
		c, err := v.Verify(context.Background(), sign(t, a, claimsAt(clk.Now())))
		wantCaller(t, c, err)

		srv.set(jwksOf(t, a.jwk(), b.jwk()))
		clk.Advance(31 * time.Second)
		c, err = v.Verify(context.Background(), sign(t, b, claimsAt(clk.Now())))
		wantCaller(t, c, err)
	})

	t.Run("500 at start", func(t *testing.T) {
		srv := newJWKSServer(t, jwksOf(t, a.jwk()))
		srv.status.Store(500)
		if _, err := auth.NewKeyCache(context.Background(), auth.URLKeys(srv.URL, nil), auth.KeyCacheOptions{}); err == nil {
			t.Fatal("NewKeyCache succeeded on a 500")
		}
	})

	t.Run("500 later", func(t *testing.T) {
		srv := newJWKSServer(t, jwksOf(t, a.jwk()))
		clk := newClock()
		keys, err := auth.NewKeyCache(context.Background(), auth.URLKeys(srv.URL, nil), auth.KeyCacheOptions{Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		v := auth.NewVerifier(testIssuer, testAudience, keys, clk.Now)
		srv.status.Store(500)
		clk.Advance(31 * time.Second)
		_, err = v.Verify(context.Background(), sign(t, b, claimsAt(clk.Now())))
		wantUnavailable(t, err)
		// A known key is still served.
		c, err := v.Verify(context.Background(), sign(t, a, claimsAt(clk.Now())))
		wantCaller(t, c, err)
		// Back up: the unknown kid is judged again after MinRefresh.
		srv.status.Store(0)
		clk.Advance(31 * time.Second)
		_, err = v.Verify(context.Background(), sign(t, b, claimsAt(clk.Now())))
		wantRefused(t, err, reasonKid)
	})

	t.Run("unreachable", func(t *testing.T) {
		srv := newJWKSServer(t, jwksOf(t, a.jwk()))
		clk := newClock()
		keys, err := auth.NewKeyCache(context.Background(), auth.URLKeys(srv.URL, nil), auth.KeyCacheOptions{Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		v := auth.NewVerifier(testIssuer, testAudience, keys, clk.Now)
		srv.Close()
		clk.Advance(31 * time.Second)
		_, err = v.Verify(context.Background(), sign(t, b, claimsAt(clk.Now())))
		wantUnavailable(t, err)
	})

	t.Run("body over 1 MiB", func(t *testing.T) {
		doc := jwksOf(t, a.jwk())
		big := append(append([]byte{}, doc[:len(doc)-1]...), []byte(`,"pad":"`+strings.Repeat("x", 1<<20)+`"}`)...)
		srv := newJWKSServer(t, big)
		_, err := auth.URLKeys(srv.URL, nil)(context.Background())
		if err == nil || !strings.Contains(err.Error(), "over") {
			t.Fatalf("URLKeys = %v, want the document refused as too big", err)
		}
		if _, err := auth.NewKeyCache(context.Background(), auth.URLKeys(srv.URL, nil), auth.KeyCacheOptions{}); err == nil {
			t.Fatal("NewKeyCache accepted a document over 1 MiB")
		}
	})

	t.Run("body of exactly 1 MiB", func(t *testing.T) {
		doc := jwksOf(t, a.jwk())
		exact := append(append([]byte{}, doc...), []byte(strings.Repeat(" ", 1<<20-len(doc)))...)
		srv := newJWKSServer(t, exact)
		if _, err := auth.NewKeyCache(context.Background(), auth.URLKeys(srv.URL, nil), auth.KeyCacheOptions{}); err != nil {
			t.Fatalf("a document of exactly 1 MiB: %v", err)
		}
	})

	t.Run("slow server", func(t *testing.T) {
		srv := newJWKSServer(t, jwksOf(t, a.jwk()))
		clk := newClock()
		// The first fetch has no short timeout: on a loaded machine 200 ms
		// can pass before a quick server's headers arrive, and that fetch
		// is not what this case is about. Nothing else uses hc until
		// Verify below, so setting its timeout after is race-free.
		hc := &http.Client{}
		keys, err := auth.NewKeyCache(context.Background(), auth.URLKeys(srv.URL, hc), auth.KeyCacheOptions{Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		hc.Timeout = 200 * time.Millisecond
		v := auth.NewVerifier(testIssuer, testAudience, keys, clk.Now)
		const serverDelay = 30 * time.Second
		srv.delay.Store(int64(serverDelay))
		clk.Advance(31 * time.Second)
		start := time.Now()
		_, err = v.Verify(context.Background(), sign(t, b, claimsAt(clk.Now())))
		wantUnavailable(t, err)
		// Not a speed target: the bound only tells "gave up at the
		// client's timeout" from "waited for the server's answer".
		if d := time.Since(start); d >= serverDelay/2 {
			t.Errorf("a slow JWKS server held the request %v", d)
		}
		// Known keys do not wait.
		c, err := v.Verify(context.Background(), sign(t, a, claimsAt(clk.Now())))
		wantCaller(t, c, err)
	})

	t.Run("bad URL", func(t *testing.T) {
		if _, err := auth.URLKeys("http://\x00", nil)(context.Background()); err == nil {
			t.Fatal("URLKeys accepted a URL with a NUL")
		}
	})
}

// ---------------------------------------------------------------------------
// Concurrency

// A request whose key is known does not wait for a refresh in progress,
// whether the refresh is for an unknown kid or for keys past MaxAge.
func TestKnownKeyNeverWaitsForARefresh(t *testing.T) {
	t.Parallel()
	for _, stale := range []bool{false, true} {
		t.Run(fmt.Sprintf("stale=%v", stale), func(t *testing.T) {
			a := ecSigner(t, "key-a")
			f := newFixture(t, auth.KeyCacheOptions{MinRefresh: 30 * time.Second, MaxAge: time.Minute}, jwksOf(t, a.jwk()))
			gate := f.src.block()
			f.clock.Advance(31 * time.Second)
			if stale {
				f.clock.Advance(time.Minute)
			}
			done := make(chan error, 1)
			go func() {
				_, err := f.v.Verify(context.Background(), signAs(t, a.method, a.priv, map[string]any{"kid": "new"}, claimsAt(f.clock.Now())))
				done <- err
			}()
			<-f.src.entered // the refresh is under way, and blocked

			answered := make(chan error, 1)
			go func() {
				_, err := f.v.Verify(context.Background(), sign(t, a, claimsAt(f.clock.Now())))
				answered <- err
			}()
			select {
			case err := <-answered:
				if err != nil {
					t.Fatalf("known key during a refresh: %v", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("a request with a known key waited for a refresh")
			}
			close(gate)
			wantRefused(t, <-done, reasonKid)
		})
	}
}

func TestConcurrentVerifyDuringRefreshes(t *testing.T) {
	t.Parallel()
	a, b := ecSigner(t, "key-a"), edSigner(t, "key-b")
	f := newFixture(t, auth.KeyCacheOptions{MinRefresh: time.Second, MaxAge: 2 * time.Second}, jwksOf(t, a.jwk()))
	f.src.set(jwksOf(t, a.jwk(), b.jwk()), nil)
	tokA := sign(t, a, claimsAt(f.clock.Now()))
	tokB := sign(t, b, claimsAt(f.clock.Now()))
	unknown := signAs(t, a.method, a.priv, map[string]any{"kid": "nope"}, claimsAt(f.clock.Now()))
	var wg sync.WaitGroup
	var bad atomic.Int32
	for i := range 64 {
		wg.Go(func() {
			for j := range 50 {
				if (i+j)%16 == 0 {
					f.clock.Advance(300 * time.Millisecond)
				}
				_, errA := f.v.Verify(context.Background(), tokA)
				_, errB := f.v.Verify(context.Background(), tokB)
				_, errU := f.v.Verify(context.Background(), unknown)
				var te *auth.TokenError
				if errA != nil || (errB != nil && !errors.As(errB, &te)) || !errors.As(errU, &te) {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d unexpected answers", bad.Load())
	}
	// The clock moved ~60 s: at most one read per MinRefresh, plus the first.
	elapsed := f.clock.Now().Sub(t0)
	if n, max := f.src.readCount(), int(elapsed/time.Second)+2; n > max {
		t.Fatalf("reads = %d over %v, want at most %d", n, elapsed, max)
	}
}

// ---------------------------------------------------------------------------
// Caller

func TestCaller(t *testing.T) {
	t.Parallel()
	c := auth.Caller{Subject: "s", Scopes: []string{auth.ScopeRead}, Accounts: []string{"acc-1"}}
	tests := []struct {
		name   string
		caller auth.Caller
		scope  string
		acct   string
		scoped bool
		acts   bool
	}{
		{"token caller, granted", c, auth.ScopeRead, "acc-1", true, true},
		{"token caller, not granted", c, auth.ScopeWrite, "acc-2", false, false},
		{"token caller, admin", c, auth.ScopeAdmin, "ACC-1", false, false},
		{"token caller, empty", c, "", "", false, false},
		{"zero caller", auth.Caller{}, auth.ScopeRead, "acc-1", false, false},
		{"zero caller with an empty account", auth.Caller{Accounts: []string{""}, Scopes: []string{""}}, "", "", true, false},
		{"unauthenticated", auth.Unauthenticated, auth.ScopeAdmin, "any-account", true, true},
		{"unauthenticated, empty account", auth.Unauthenticated, auth.ScopeWrite, "", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.caller.HasScope(tt.scope); got != tt.scoped {
				t.Errorf("HasScope(%q) = %v", tt.scope, got)
			}
			if got := tt.caller.MayActFor(tt.acct); got != tt.acts {
				t.Errorf("MayActFor(%q) = %v", tt.acct, got)
			}
		})
	}
	if !auth.AdminToken.HasScope(auth.ScopeAdmin) || auth.AdminToken.HasScope(auth.ScopeWrite) || auth.AdminToken.MayActFor("acc-1") {
		t.Fatal("ADMIN_TOKEN's caller is an operator, no more")
	}
	for _, c := range []auth.Caller{auth.AdminToken, auth.Unauthenticated} {
		if !auth.ReservedSubject(c.Subject) {
			t.Fatalf("%s: a subject a token may carry", c.Subject)
		}
	}
	for _, sub := range []string{"ops-pix:admin-token", "pix", "pix-admin", ""} {
		if auth.ReservedSubject(sub) {
			t.Fatalf("%q: reserved, though not under the prefix", sub)
		}
	}
	// A caller built from a token's claims is never unrestricted, even
	// named like the development caller.
	fake := auth.Caller{Subject: auth.Unauthenticated.Subject}
	if fake.HasScope(auth.ScopeAdmin) || fake.MayActFor("acc-1") {
		t.Fatal("a Caller named unauthenticated is unrestricted")
	}
}

func TestTokenErrorUnwraps(t *testing.T) {
	t.Parallel()
	ec := ecSigner(t, "ec-1")
	f := newFixture(t, auth.KeyCacheOptions{}, jwksOf(t, ec.jwk()))
	c := claimsAt(f.clock.Now())
	c["exp"] = f.clock.Now().Add(-time.Hour).Unix()
	_, err := f.v.Verify(context.Background(), sign(t, ec, c))
	if !errors.Is(err, jwt.ErrTokenExpired) {
		t.Fatalf("err = %v, want it to wrap jwt.ErrTokenExpired", err)
	}
	if (&auth.TokenError{Reason: "r"}).Error() != "invalid bearer token: r" {
		t.Fatal("TokenError without a cause")
	}
}

// ---------------------------------------------------------------------------
// Weaknesses found attacking the package: each of these failed before its
// fix in keys.go / verifier.go.

// W1. While the JWKS source is down, a token with a kid we don't hold is
// 503 (ErrKeysUnavailable) every time, not 503 once and then 401 "unknown
// kid" until MinRefresh has passed; and so for every request that waited
// on the failed read.
func TestUnknownKidWhileTheSourceIsDownIsUnavailableEveryTime(t *testing.T) {
	t.Parallel()
	a, b := ecSigner(t, "key-a"), edSigner(t, "key-b")
	f := newFixture(t, auth.KeyCacheOptions{MinRefresh: 30 * time.Second}, jwksOf(t, a.jwk()))
	f.src.set(nil, errors.New("dial tcp: connection refused"))
	f.clock.Advance(31 * time.Second)
	for i := range 3 {
		_, err := f.v.Verify(context.Background(), sign(t, b, claimsAt(f.clock.Now())))
		if !errors.Is(err, auth.ErrKeysUnavailable) {
			t.Fatalf("request %d with a kid we don't hold while the source is down: %v, want ErrKeysUnavailable", i+1, err)
		}
		wantUnavailable(t, err)
		f.clock.Advance(time.Second)
	}
	if n := f.src.readCount(); n != 2 {
		t.Fatalf("reads = %d, want 2: the rate limit holds for failed reads too", n)
	}
	// A known key is still served meanwhile.
	c, err := f.v.Verify(context.Background(), sign(t, a, claimsAt(f.clock.Now())))
	wantCaller(t, c, err)

	// Requests that queued behind the failing read.
	f.clock.Advance(31 * time.Second)
	gate := f.src.block()
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := f.v.Verify(context.Background(), sign(t, b, claimsAt(f.clock.Now())))
			errs <- err
		}()
	}
	<-f.src.entered
	time.Sleep(20 * time.Millisecond) // let the others queue
	close(gate)
	for range n {
		if err := <-errs; !errors.Is(err, auth.ErrKeysUnavailable) {
			t.Errorf("a request that waited on the failed read: %v, want ErrKeysUnavailable", err)
		}
	}

	// Back up after MinRefresh: the kid is judged again.
	f.src.set(jwksOf(t, a.jwk()), nil)
	f.clock.Advance(31 * time.Second)
	_, err = f.v.Verify(context.Background(), sign(t, b, claimsAt(f.clock.Now())))
	wantRefused(t, err, reasonKid)
}

// W2. The refresh is shared by every request, yet it ran under the context
// of the request that happened to start it: a client that cancels (or
// disconnects) fails the read, and for MinRefresh nobody reads again, so a
// rotated-in key is refused (401) and a removed key stays trusted past
// MaxAge. An attacker needs one cancelled request per MinRefresh.
func TestCancelledRequestDoesNotAbortTheSharedRefresh(t *testing.T) {
	t.Parallel()
	a, b := ecSigner(t, "key-a"), edSigner(t, "key-b")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	t.Run("cancelled before the read (URL source)", func(t *testing.T) {
		srv := newJWKSServer(t, jwksOf(t, a.jwk()))
		clk := newClock()
		keys, err := auth.NewKeyCache(context.Background(), auth.URLKeys(srv.URL, nil),
			auth.KeyCacheOptions{MinRefresh: 30 * time.Second, MaxAge: 10 * time.Minute, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		v := auth.NewVerifier(testIssuer, testAudience, keys, clk.Now)

		// Rotation: the issuer now serves a and b.
		srv.set(jwksOf(t, a.jwk(), b.jwk()))
		clk.Advance(31 * time.Second)
		_, _ = v.Verify(cancelled, signAs(t, a.method, a.priv, map[string]any{"kid": "made-up"}, claimsAt(clk.Now())))
		c, err := v.Verify(context.Background(), sign(t, b, claimsAt(clk.Now())))
		if err != nil {
			t.Fatalf("the rotated-in key after an attacker's cancelled request: %v", err)
		}
		wantCaller(t, c, err)

		// Revocation: the issuer removes a; the cache passes MaxAge.
		srv.set(jwksOf(t, b.jwk()))
		clk.Advance(10*time.Minute + time.Second)
		_, _ = v.Verify(cancelled, signAs(t, a.method, a.priv, map[string]any{"kid": "made-up"}, claimsAt(clk.Now())))
		if _, err := v.Verify(context.Background(), sign(t, a, claimsAt(clk.Now()))); err == nil {
			t.Fatal("a key the issuer removed is trusted past MaxAge after an attacker's cancelled request")
		}
	})

	t.Run("cancelled during the read", func(t *testing.T) {
		f := newFixture(t, auth.KeyCacheOptions{MinRefresh: 30 * time.Second}, jwksOf(t, a.jwk()))
		f.src.set(jwksOf(t, a.jwk(), b.jwk()), nil)
		f.clock.Advance(31 * time.Second)
		gate := f.src.block()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = f.v.Verify(ctx, signAs(t, a.method, a.priv, map[string]any{"kid": "made-up"}, claimsAt(f.clock.Now())))
		}()
		<-f.src.entered
		cancel() // the client goes away mid-read
		time.Sleep(20 * time.Millisecond)
		close(gate)
		<-done
		c, err := f.v.Verify(context.Background(), sign(t, b, claimsAt(f.clock.Now())))
		if err != nil {
			t.Fatalf("the rotated-in key after a request cancelled mid-read: %v", err)
		}
		wantCaller(t, c, err)
	})
}

// W3. RFC 7517 §5: keys of a kind we don't understand are ignored. One such
// key (an X25519 encryption key, a secp256k1 key, a new kty) used to fail
// the whole document: no start, or no rotation ever picked up again.
func TestJWKSWithAKeyWeDontUnderstandStillServes(t *testing.T) {
	t.Parallel()
	good := ecSigner(t, "good")
	goodJSON := jwkJSON(t, good.jwk())
	b32 := base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	offCurve := base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("\x01", 32)))
	others := map[string]string{
		"X25519 encryption key":      `{"kty":"OKP","crv":"X25519","use":"enc","kid":"enc-1","x":"` + b32 + `"}`,
		"Ed448 key":                  `{"kty":"OKP","crv":"Ed448","kid":"ed448","x":"` + b32 + `"}`,
		"secp256k1 key":              `{"kty":"EC","crv":"secp256k1","kid":"k1","x":"` + b32 + `","y":"` + b32 + `"}`,
		"EC key off its curve":       `{"kty":"EC","crv":"P-256","kid":"off","x":"` + offCurve + `","y":"` + offCurve + `"}`,
		"unknown kty":                `{"kty":"PQ","kid":"pq-1","pub":"AAAA"}`,
		"no kty":                     `{"kid":"no-kty","x":"AAAA"}`,
		"RSA key, bad modulus":       `{"kty":"RSA","kid":"bad-n","n":"!!","e":"AQAB"}`,
		"low-order Ed25519, bad x5t": `{"kty":"OKP","crv":"Ed25519","kid":"x5t","x":"` + b32 + `","x5t":"!!"}`,
		"not an object":              `"a string"`,
		"null":                       `null`,
	}
	for name, other := range others {
		t.Run(name, func(t *testing.T) {
			for _, doc := range [][]byte{jwksRaw(other, goodJSON), jwksRaw(goodJSON, other)} {
				clk := newClock()
				keys, err := auth.NewKeyCache(context.Background(), newMemSource(doc).read, auth.KeyCacheOptions{Now: clk.Now})
				if err != nil {
					t.Fatalf("NewKeyCache(%s): %v", doc, err)
				}
				v := auth.NewVerifier(testIssuer, testAudience, keys, clk.Now)
				c, err := v.Verify(context.Background(), sign(t, good, claimsAt(clk.Now())))
				wantCaller(t, c, err)
			}
			// Alone, it still leaves no usable key.
			if _, err := auth.NewKeyCache(context.Background(), newMemSource(jwksRaw(other)).read, auth.KeyCacheOptions{}); err == nil {
				t.Fatal("NewKeyCache accepted a JWKS without a usable key")
			}
		})
	}
}

// W4. RFC 7517 §4.5 lets keys of different types share a kid. Only the last
// key of a kid was kept, so which of the issuer's keys we trusted depended
// on the order of the document. Every usable key of a kid serves now, each
// within its pinned algorithm.
func TestDuplicateKid(t *testing.T) {
	t.Parallel()
	ec, rs, ed := ecSigner(t, "shared"), rsaSigner("shared"), edSigner(t, "shared")
	ec2 := ecSigner(t, "shared")
	docs := map[string][]byte{
		"EC then RSA":     jwksOf(t, ec.jwk(), rs.jwk(), ed.jwk(), ec2.jwk()),
		"RSA then EC":     jwksOf(t, ed.jwk(), ec2.jwk(), rs.jwk(), ec.jwk()),
		"with duplicates": jwksOf(t, ec.jwk(), ec.jwk(), rs.jwk(), ed.jwk(), ec2.jwk(), rs.jwk()),
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, auth.KeyCacheOptions{}, doc)
			c := claimsAt(f.clock.Now())
			for _, s := range []signer{ec, rs, ed, ec2} {
				caller, err := f.v.Verify(context.Background(), sign(t, s, c))
				if err != nil {
					t.Fatalf("%s key under a shared kid: %v", s.method.Alg(), err)
				}
				wantCaller(t, caller, err)
			}
			for _, tok := range []string{
				signAs(t, jwt.SigningMethodPS256, rsaKey(), map[string]any{"kid": "shared"}, c),
				signAs(t, jwt.SigningMethodHS256, []byte(ed.pub.(ed25519.PublicKey)), map[string]any{"kid": "shared"}, c),
				sign(t, ecSigner(t, "shared"), c),
			} {
				_, err := f.v.Verify(context.Background(), tok)
				wantRefused(t, err, reasonSignature)
			}
		})
	}
	// A kid whose every key is pinned to another algorithm.
	f := newFixture(t, auth.KeyCacheOptions{}, jwksOf(t, ec.jwk(), ec2.jwk()))
	_, err := f.v.Verify(context.Background(), signAs(t, jwt.SigningMethodRS256, rsaKey(), map[string]any{"kid": "shared"}, claimsAt(f.clock.Now())))
	wantRefused(t, err, reasonSignature)
}

// golang-jwt takes an empty expected issuer or audience as "don't check":
// a verifier built so refuses everything instead.
func TestVerifierWithoutIssuerOrAudienceRefusesAll(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	issuer, err := auth.OpenDevIssuer(dir, "", "")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := auth.NewKeyCache(context.Background(), auth.FileKeys(filepath.Join(dir, auth.DevJWKSFile)), auth.KeyCacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token, err := issuer.Mint(auth.TokenSpec{Subject: "s", Accounts: []string{"a"}, TTL: time.Minute}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []*auth.Verifier{auth.NewVerifier("", "", keys, nil), auth.NewVerifier("x", "", keys, nil), auth.NewVerifier("", "y", keys, nil)} {
		var tokenErr *auth.TokenError
		if _, err := v.Verify(context.Background(), token); !errors.As(err, &tokenErr) {
			t.Fatalf("err = %v, want a TokenError", err)
		}
	}
}
