package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
)

// ErrKeysUnavailable: the issuer's keys could not be read (the JWKS URL did
// not answer), so a token signed with a key we don't hold yet can't be
// judged. It is the service's problem, not the caller's: 503, not 401.
var ErrKeysUnavailable = errors.New("the token issuer's keys can't be read right now")

// minRSABits refuses RSA keys too short to trust.
const minRSABits = 2048

// maxJWKSBytes bounds what a JWKS URL may send us.
const maxJWKSBytes = 1 << 20

// KeySource reads a JWKS document: a file, or a URL.
type KeySource func(ctx context.Context) ([]byte, error)

// FileKeys reads the JWKS document in path at every refresh, so that a key
// rotated into the file (a mounted secret) is picked up.
func FileKeys(path string) KeySource {
	return func(context.Context) ([]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read JWKS file: %w", err)
		}
		return b, nil
	}
}

// URLKeys fetches the JWKS document at url with hc (nil: a client with a
// 5 s timeout).
func URLKeys(url string, hc *http.Client) KeySource {
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second, CheckRedirect: httpsRedirectsOnly}
	}
	return func(ctx context.Context) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, fmt.Errorf("JWKS request: %w", err)
		}
		req.Header.Set("Accept", "application/json")
		res, err := hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("fetch JWKS: %w", err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("fetch JWKS: %s answered %d", url, res.StatusCode)
		}
		b, err := io.ReadAll(io.LimitReader(res.Body, maxJWKSBytes+1))
		if err != nil {
			return nil, fmt.Errorf("fetch JWKS: %w", err)
		}
		if len(b) > maxJWKSBytes {
			return nil, fmt.Errorf("fetch JWKS: the document is over %d bytes", maxJWKSBytes)
		}
		return b, nil
	}
}

// httpsRedirectsOnly holds every redirect hop to the rule of the URL
// itself (CheckJWKSURL): a loopback http URL can't hand us over to plain
// http elsewhere.
func httpsRedirectsOnly(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("too many redirects")
	}
	if err := CheckJWKSURL(req.URL.String()); err != nil {
		return fmt.Errorf("refusing a redirect to %s: %w", req.URL.Redacted(), err)
	}
	return nil
}

// CheckJWKSURL accepts https, or plain http to a loopback address only:
// whoever can rewrite the keys in transit can mint any token.
func CheckJWKSURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return errors.New("must be an absolute URL without credentials, such as https://id.bank.example/jwks.json")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
			return nil
		}
	}
	return errors.New("must be https:// (plain http only to a loopback address)")
}

// verificationKey is one public key of the issuer.
type verificationKey struct {
	key any
	// alg is the key's "alg" member, "" when the JWKS does not pin one.
	alg string
}

// parseJWKS keeps the usable signature keys of a JWKS document by key id:
// public RSA (at least 2048 bits), P-256 ECDSA and Ed25519 keys with a kid,
// not marked for encryption only. Anything else is skipped, not trusted,
// keys jwkset can't parse included (RFC 7517 §5: a key of a kind we don't
// understand must not make the others unusable), and so is a key that
// carries private material: an issuer that publishes it is compromised.
// Keys may share a kid (RFC 7517 §4.5: of different types, say); all of
// them are kept.
func parseJWKS(doc []byte) (map[string][]verificationKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		return nil, fmt.Errorf("parse JWKS: %w", err)
	}
	keys := make(map[string][]verificationKey, len(set.Keys))
	for _, raw := range set.Keys {
		var m jwkset.JWKMarshal
		if err := json.Unmarshal(raw, &m); err != nil {
			continue
		}
		if m.KID == "" || (m.USE != "" && m.USE != jwkset.UseSig) || hasPrivateMaterial(m) || badThumbprint(m) {
			continue
		}
		k, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
		if err != nil {
			continue
		}
		switch pub := k.Key().(type) {
		case *rsa.PublicKey:
			if pub.N.BitLen() < minRSABits {
				continue
			}
		case *ecdsa.PublicKey:
			if pub.Curve != elliptic.P256() {
				continue
			}
		case ed25519.PublicKey:
		default:
			continue
		}
		keys[m.KID] = append(keys[m.KID], verificationKey{key: k.Key(), alg: m.ALG.String()})
	}
	if len(keys) == 0 {
		return nil, errors.New("parse JWKS: no usable signature key (RSA ≥ 2048 bits, P-256 or Ed25519, with a kid)")
	}
	return keys, nil
}

// badThumbprint: an x5t or x5t#S256 member that is not base64url (RFC 7517
// §4.8, §4.9) makes the key one we don't understand; jwkset reads the
// thumbprints only beside an x5c chain.
func badThumbprint(m jwkset.JWKMarshal) bool {
	for _, t := range []string{m.X5T, m.X5TS256} {
		if _, err := base64.RawURLEncoding.DecodeString(t); err != nil {
			return true
		}
	}
	return false
}

// hasPrivateMaterial: m holds a private or symmetric key's secret (RFC 7518
// §6.2.2, §6.3.2, §6.4; RFC 8037 §2), which jwkset would read as the
// public key it contains.
func hasPrivateMaterial(m jwkset.JWKMarshal) bool {
	return m.D != "" || m.P != "" || m.Q != "" || m.DP != "" || m.DQ != "" || m.QI != "" || len(m.OTH) > 0 || m.K != ""
}

// KeyCache holds the issuer's keys. It reads them again when a token names
// a key id it does not hold (a rotation), at most once per MinRefresh, and
// when what it holds is older than MaxAge (so that a removed key stops
// being trusted). While the issuer can't be read, the keys held serve for
// up to MaxStale past their reading, then none does: a key the issuer
// removed can't be kept alive by keeping us from reading. One read runs
// at a time; a request whose key is known never waits for one.
type KeyCache struct {
	source     KeySource
	minRefresh time.Duration
	maxAge     time.Duration
	maxStale   time.Duration
	now        func() time.Time

	// refreshing holds a token while a read is in progress: one read at a
	// time, and a request can stop waiting for it when it ends.
	refreshing chan struct{}

	mu       sync.Mutex // guards what follows
	keys     map[string][]verificationKey
	loadedAt time.Time // when keys were read
	tried    time.Time // the last read, successful or not
	triedErr error     // how the last read failed, nil if it did not
}

// KeyCacheOptions tune a KeyCache; zero values take the defaults.
type KeyCacheOptions struct {
	MinRefresh time.Duration // default 30 s
	MaxAge     time.Duration // default 10 min
	MaxStale   time.Duration // default 1 h
	Now        func() time.Time
}

// NewKeyCache reads the keys once: a service that can't read its issuer's
// keys at start refuses to start rather than refuse every caller.
func NewKeyCache(ctx context.Context, source KeySource, o KeyCacheOptions) (*KeyCache, error) {
	c := &KeyCache{source: source, minRefresh: o.MinRefresh, maxAge: o.MaxAge, maxStale: o.MaxStale, now: o.Now,
		refreshing: make(chan struct{}, 1)}
	if c.minRefresh <= 0 {
		c.minRefresh = 30 * time.Second
	}
	if c.maxAge <= 0 {
		c.maxAge = 10 * time.Minute
	}
	switch {
	case c.maxStale <= 0:
		c.maxStale = max(time.Hour, c.maxAge)
	case c.maxStale < c.maxAge:
		c.maxStale = c.maxAge // never looser than asked
	}
	if c.now == nil {
		c.now = time.Now
	}
	keys, err := c.read(ctx)
	if err != nil {
		return nil, err
	}
	c.keys, c.loadedAt, c.tried = keys, c.now(), c.now()
	return c, nil
}

// lookup returns the keys kid names: errUnknownKey when the issuer has no
// such key, ErrKeysUnavailable when it could not be asked.
func (c *KeyCache) lookup(ctx context.Context, kid string) ([]verificationKey, error) {
	k, known, stale := c.held(kid)
	switch {
	case known && !stale:
		return k, nil
	case known && !c.tooStale():
		// Stale: start a read unless one is in progress, and wait for it
		// briefly (a quick issuer answers with its current keys); the key
		// held is the issuer's last word meanwhile, and after a failed read.
		if c.tryAcquire() {
			done := make(chan struct{})
			// Owned by the cache: one at a time, bounded by read's timeout,
			// and not ended by this request, whose client may go away.
			go func() {
				defer close(done)
				defer c.release()
				_ = c.refreshLocked(ctx) //nolint:errcheck // a failed read keeps the key held
			}()
			select {
			case <-done:
			case <-time.After(staleReadWait):
			case <-ctx.Done():
			}
		}
		if k2, ok, _ := c.held(kid); ok {
			return k2, nil
		}
		return nil, errUnknownKey // removed by the issuer
	}
	// Unknown (perhaps rotated in since the last read), or held past
	// MaxStale: only a read answers, and this request waits for it, as
	// long as it lasts itself.
	if err := c.acquire(ctx); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeysUnavailable, err)
	}
	err := c.refreshLocked(ctx)
	c.release()
	k, ok, _ := c.held(kid)
	switch {
	case ok && !c.tooStale():
		return k, nil
	case ok || err != nil:
		if err == nil {
			err = errors.New("the issuer's keys have not been read for too long")
		}
		return nil, fmt.Errorf("%w: %w", ErrKeysUnavailable, err)
	}
	return nil, errUnknownKey
}

// staleReadWait is how long a request with a known but stale key waits for
// the read it started before going on with the key held.
const staleReadWait = 100 * time.Millisecond

func (c *KeyCache) tryAcquire() bool {
	select {
	case c.refreshing <- struct{}{}:
		return true
	default:
		return false
	}
}

func (c *KeyCache) acquire(ctx context.Context) error {
	select {
	case c.refreshing <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *KeyCache) release() { <-c.refreshing }

// held is the keys kid names among those read, and whether they are past
// MaxAge.
func (c *KeyCache) held(kid string) (k []verificationKey, known, stale bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, known = c.keys[kid]
	return k, known, c.now().Sub(c.loadedAt) >= c.maxAge
}

// tooStale reports that the keys held were read more than MaxStale ago.
func (c *KeyCache) tooStale() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now().Sub(c.loadedAt) >= c.maxStale
}

// refreshLocked reads the keys again unless the last read was less than
// MinRefresh ago (an attacker sending made-up key ids can't make us hammer
// the issuer); then it returns how that last read failed, so that the
// keys stay unavailable (503), not unknown (401), until the next read. The
// caller holds c.refreshing. A failed read keeps the keys held.
//
// The read serves every request, not only the one that started it: it
// does not end with that request's context (a client that goes away must
// not fail it, and with it key rotation and removal, for MinRefresh); read
// bounds it.
func (c *KeyCache) refreshLocked(ctx context.Context) error {
	c.mu.Lock()
	if c.now().Sub(c.tried) < c.minRefresh {
		err := c.triedErr
		c.mu.Unlock()
		return err
	}
	c.tried = c.now()
	c.mu.Unlock()
	keys, err := c.read(context.WithoutCancel(ctx))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.triedErr = err
	if err != nil {
		return err
	}
	c.keys, c.loadedAt = keys, c.now()
	return nil
}

// read fetches and parses the JWKS document, within 10 s.
func (c *KeyCache) read(ctx context.Context) (map[string][]verificationKey, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	doc, err := c.source(ctx)
	if err != nil {
		return nil, err
	}
	return parseJWKS(doc)
}
