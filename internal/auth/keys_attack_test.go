package auth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// attackIssuer is a fake identity provider: its JWKS document can be
// changed, taken down, and it honours the fetch's context like URLKeys.
type attackIssuer struct {
	mu   sync.Mutex
	keys map[string]ed25519.PrivateKey // served
	down bool
	all  map[string]ed25519.PrivateKey // every key ever made, by kid
}

func newAttackIssuer(t *testing.T, kids ...string) *attackIssuer {
	t.Helper()
	is := &attackIssuer{keys: map[string]ed25519.PrivateKey{}, all: map[string]ed25519.PrivateKey{}}
	for _, kid := range kids {
		is.add(t, kid)
	}
	return is
}

func (is *attackIssuer) add(t *testing.T, kid string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys[kid], is.all[kid] = priv, priv
}

func (is *attackIssuer) remove(kid string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	delete(is.keys, kid)
}

func (is *attackIssuer) setDown(down bool) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.down = down
}

// source behaves like URLKeys: a cancelled request context fails the fetch.
func (is *attackIssuer) source(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.down {
		return nil, errors.New("fetch JWKS: dial tcp: connection refused")
	}
	var set jwkset.JWKSMarshal
	for kid, k := range is.keys {
		j, err := jwkset.NewJWKFromKey(k.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid, ALG: jwkset.AlgEdDSA, USE: jwkset.UseSig}})
		if err != nil {
			return nil, err
		}
		set.Keys = append(set.Keys, j.Marshal())
	}
	return json.Marshal(set)
}

func (is *attackIssuer) token(t *testing.T, kid string, now time.Time) string {
	t.Helper()
	is.mu.Lock()
	key := is.all[kid]
	is.mu.Unlock()
	if key == nil {
		_, key, _ = ed25519.GenerateKey(rand.Reader)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
		"iss": "https://id.example", "aud": "pix-api", "sub": "customer-1",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "scope": "pix:read", "accounts": []string{"acc-1"},
	})
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type attackClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *attackClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *attackClock) add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }
func newAttackClock() *attackClock         { return &attackClock{t: time.Now()} }
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
func isTokenError(err error) bool { var te *TokenError; return errors.As(err, &te) }
func describe(err error) string {
	if err == nil {
		return "accepted"
	}
	return err.Error()
}

func newAttackVerifier(t *testing.T, is *attackIssuer, clock *attackClock) *Verifier {
	t.Helper()
	keys, err := NewKeyCache(context.Background(), is.source, KeyCacheOptions{Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	return NewVerifier("https://id.example", "pix-api", keys, clock.now)
}

// While the JWKS endpoint is down, a token signed with a key rotated in
// since the last read must be 503 (ErrKeysUnavailable), every time: not
// 503 once and then 401 "unknown kid" for the next 30 s.
func TestAttackJWKSOutageAnswers401AfterFirstRequest(t *testing.T) {
	t.Parallel()
	clock := newAttackClock()
	is := newAttackIssuer(t, "kid-1")
	v := newAttackVerifier(t, is, clock)

	clock.add(31 * time.Second) // past MinRefresh
	is.add(t, "kid-2")          // the issuer rotates a key in...
	is.setDown(true)            // ...and its JWKS endpoint is unreachable

	for i := 1; i <= 3; i++ {
		_, err := v.Verify(context.Background(), is.token(t, "kid-2", clock.now()))
		if !errors.Is(err, ErrKeysUnavailable) {
			t.Errorf("request %d with the rotated key while the JWKS is down: want ErrKeysUnavailable (503), got %v (TokenError→401: %v)",
				i, describe(err), isTokenError(err))
		}
		clock.add(time.Second)
	}
}

// A client that cancels its request during the key refresh (disconnects,
// or its own timeout) fails the JWKS read; for MinRefresh afterwards the
// cache refuses to read again, so every caller with a key the issuer has
// rotated in is answered 401 "unknown kid" although the issuer serves it.
func TestAttackCancelledRequestPoisonsKeyRotation(t *testing.T) {
	t.Parallel()
	clock := newAttackClock()
	is := newAttackIssuer(t, "kid-1")
	v := newAttackVerifier(t, is, clock)

	clock.add(31 * time.Second)
	is.add(t, "kid-2") // rotation: the issuer now serves kid-1 and kid-2

	// The attacker: any made-up kid, request context cancelled.
	_, _ = v.Verify(cancelled(), is.token(t, "made-up", clock.now()))

	clock.add(time.Second)
	_, err := v.Verify(context.Background(), is.token(t, "kid-2", clock.now()))
	if err != nil {
		t.Errorf("legitimate token signed with the issuer's current key kid-2 refused after an attacker's cancelled request: %v (TokenError→401: %v)",
			err, isTokenError(err))
	}
}

// A key the issuer removed (say, compromised) must stop being trusted once
// the cache is older than MaxAge. An attacker who keeps the refresh failing
// with cancelled requests (one per MinRefresh) keeps the removed key alive.
func TestAttackRemovedKeyStaysTrusted(t *testing.T) {
	t.Parallel()
	clock := newAttackClock()
	is := newAttackIssuer(t, "kid-1", "kid-2")
	v := newAttackVerifier(t, is, clock)

	is.remove("kid-1") // revoked at the issuer
	clock.add(10*time.Minute + time.Second)

	for round := 0; round < 4; round++ {
		_, _ = v.Verify(cancelled(), is.token(t, "made-up", clock.now())) // poison this MinRefresh window
		clock.add(time.Second)
		if _, err := v.Verify(context.Background(), is.token(t, "kid-1", clock.now())); err == nil {
			t.Errorf("round %d (%d s after the cache passed MaxAge): a token signed by the removed key kid-1 was accepted",
				round, 1+31*round)
		}
		clock.add(30 * time.Second)
	}
}

// Control of the tests above: without the attacker, the same steps hold.
func TestAttackControlWithoutPoisoning(t *testing.T) {
	t.Parallel()
	clock := newAttackClock()
	is := newAttackIssuer(t, "kid-1", "kid-2")
	v := newAttackVerifier(t, is, clock)
	is.remove("kid-1")
	is.add(t, "kid-3")
	clock.add(10*time.Minute + time.Second)
	if _, err := v.Verify(context.Background(), is.token(t, "kid-1", clock.now())); err == nil {
		t.Error("removed key accepted without an attacker")
	}
	clock.add(31 * time.Second)
	if _, err := v.Verify(context.Background(), is.token(t, "kid-3", clock.now())); err != nil {
		t.Errorf("rotated key refused without an attacker: %v", err)
	}
}
