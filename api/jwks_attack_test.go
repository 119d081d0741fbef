package api_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/auth"
)

// An outsider with no valid token, by disconnecting while the API fetches
// the issuer's JWKS (AUTH_JWKS_URL), makes the API answer 401 to every
// legitimate customer whose token is signed with a key the issuer rotated
// in, for the next MinRefresh (30 s); repeated, for as long as it likes.
func TestAttackDisconnectDuringJWKSFetchLocksOutRotatedKey(t *testing.T) {
	var mu sync.Mutex
	keys := map[string]ed25519.PrivateKey{}
	addKey := func(kid string) {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		mu.Lock()
		keys[kid] = priv
		mu.Unlock()
	}
	addKey("kid-1")
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond) // an identity provider's ordinary latency
		mu.Lock()
		defer mu.Unlock()
		var set jwkset.JWKSMarshal
		for kid, k := range keys {
			j, err := jwkset.NewJWKFromKey(k.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid, ALG: jwkset.AlgEdDSA, USE: jwkset.UseSig}})
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			set.Keys = append(set.Keys, j.Marshal())
		}
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(jwks.Close)

	var clockMu sync.Mutex
	offset := time.Duration(0)
	now := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return time.Now().Add(offset) }
	cache, err := auth.NewKeyCache(context.Background(), auth.URLKeys(jwks.URL, nil), auth.KeyCacheOptions{Now: now})
	require.NoError(t, err)
	verifier := auth.NewVerifier("https://id.example", "pix-api", cache, nil)

	srv := newServer(t, dbtest.New(t), func(d *api.Deps) { d.OpenCustomerRoutes = false; d.Tokens = verifier })

	token := func(kid string) string {
		mu.Lock()
		key := keys[kid]
		mu.Unlock()
		if key == nil {
			_, key, _ = ed25519.GenerateKey(rand.Reader)
		}
		n := time.Now()
		tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
			"iss": "https://id.example", "aud": "pix-api", "sub": "customer-1", "iat": n.Unix(), "exp": n.Add(time.Hour).Unix(),
			"scope": auth.ScopeRead, "accounts": []string{"acc-1"},
		})
		tok.Header["kid"] = kid
		s, err := tok.SignedString(key)
		require.NoError(t, err)
		return s
	}
	get := func(hc *http.Client, tok string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/accounts/acc-1", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer res.Body.Close()
		return res.StatusCode, res.Header.Get("WWW-Authenticate"), nil
	}

	clockMu.Lock()
	offset = 31 * time.Second // past MinRefresh since the start's read
	clockMu.Unlock()
	addKey("kid-2") // the issuer rotates a key in

	// The attacker: a made-up kid, and a client that gives up after 50 ms.
	_, _, err = get(&http.Client{Timeout: 50 * time.Millisecond}, token("made-up"))
	require.Error(t, err, "the attacker's client gives up")
	time.Sleep(500 * time.Millisecond)

	// A legitimate customer, whose token the issuer's JWKS vouches for.
	status, challenge, err := get(http.DefaultClient, token("kid-2"))
	require.NoError(t, err)
	require.NotEqual(t, http.StatusUnauthorized, status,
		"a token signed with a key the issuer serves was refused after an outsider's aborted request: %d %s", status, challenge)
}
