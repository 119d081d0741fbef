package auth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// reattackJWKS is one Ed25519 key's JWKS document and a token signer.
type reattackJWKS struct {
	kid  string
	priv ed25519.PrivateKey
}

func newReattackJWKS(t *testing.T, kid string) reattackJWKS {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return reattackJWKS{kid, priv}
}

func (k reattackJWKS) doc(t *testing.T) []byte {
	t.Helper()
	b, err := JWKS(k.kid, k.priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (k reattackJWKS) token(t *testing.T, kid string, now time.Time) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
		"iss": "https://id.example", "aud": "pix-api", "sub": "customer-1",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "scope": "pix:read",
	})
	tok.Header["kid"] = kid
	s, err := tok.SignedString(k.priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type reattackClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *reattackClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *reattackClock) add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// nonLoopbackIPv4 is an address of this machine off loopback, "" if none.
func nonLoopbackIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

// AUTH_JWKS_URL may be plain http only to loopback (config.checkJWKSURL):
// "whoever can rewrite the keys in transit can mint any token". Yet a
// loopback http URL that redirects to plain http off loopback is followed:
// the keys then travel in clear over the network, and whoever is on that
// path can substitute their own.
func TestReattackLoopbackHTTPRedirectToRemoteHTTPIsRefused(t *testing.T) {
	t.Parallel()
	// The redirect policy alone.
	via := []*http.Request{{URL: mustURL(t, "http://127.0.0.1:8080/jwks.json")}}
	next := &http.Request{URL: mustURL(t, "http://id.bank.example/jwks.json")}
	if err := httpsRedirectsOnly(next, via); err == nil {
		t.Errorf("httpsRedirectsOnly: a redirect from http://127.0.0.1 to http://id.bank.example (plain http, off loopback) is allowed")
	}

	// End to end, when this machine has an address off loopback.
	ip := nonLoopbackIPv4(t)
	if ip == "" {
		t.Skip("no address off loopback to redirect to")
	}
	k := newReattackJWKS(t, "remote-kid")
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Skipf("listen on %s: %v", ip, err)
	}
	remote := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(k.doc(t))
	})}}
	remote.Start()
	t.Cleanup(remote.Close)
	local := httptest.NewServer(http.RedirectHandler(remote.URL+"/jwks.json", http.StatusFound))
	t.Cleanup(local.Close)

	doc, err := URLKeys(local.URL+"/jwks.json", nil)(context.Background())
	if err == nil {
		t.Errorf("URLKeys(%s) followed a redirect to %s (plain http off loopback) and read %d bytes of keys from it",
			local.URL, remote.URL, len(doc))
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// KeyCacheOptions.MaxStale asks for a bound on how long keys are trusted
// while the issuer can't be read. One below MaxAge is not clamped to
// MaxAge: it is replaced by one hour, so a tighter bound asked for becomes
// a looser one, silently.
func TestReattackMaxStaleBelowMaxAgeIsNotLoosened(t *testing.T) {
	t.Parallel()
	k := newReattackJWKS(t, "kid-1")
	clock := &reattackClock{t: time.Now()}
	var down bool
	var mu sync.Mutex
	src := func(context.Context) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return nil, errReattackDown
		}
		return k.doc(t), nil
	}
	c, err := NewKeyCache(context.Background(), src, KeyCacheOptions{MaxAge: 10 * time.Minute, MaxStale: 5 * time.Minute, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	if c.maxStale > 10*time.Minute {
		t.Errorf("MaxStale 5m with MaxAge 10m became %v (want at most MaxAge, 10m)", c.maxStale)
	}
	v := NewVerifier("https://id.example", "pix-api", c, clock.now)
	mu.Lock()
	down = true
	mu.Unlock()
	clock.add(30 * time.Minute)
	if _, err := v.Verify(context.Background(), k.token(t, "kid-1", clock.now())); err == nil {
		t.Errorf("issuer unreachable, keys read 30m ago, MaxStale asked 5m: the token is still accepted")
	}
}

var errReattackDown = &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "connection refused"}}

// blackhole accepts connections and never answers: an issuer that hangs.
func blackhole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/jwks.json"
}

// "A request whose key is known never waits for one [read]": the one that
// finds the keys past MaxAge and wins TryLock does the read itself, and
// waits for all of it (URLKeys' 5 s client timeout) when the issuer hangs.
func TestReattackKnownStaleKeyWaitsForAHangingIssuer(t *testing.T) {
	t.Parallel()
	k := newReattackJWKS(t, "kid-1")
	served := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(k.doc(t)) }))
	t.Cleanup(served.Close)
	hang := blackhole(t)
	var urlMu sync.Mutex
	target := served.URL
	src := func(ctx context.Context) ([]byte, error) {
		urlMu.Lock()
		u := target
		urlMu.Unlock()
		return URLKeys(u, nil)(ctx)
	}
	clock := &reattackClock{t: time.Now()}
	c, err := NewKeyCache(context.Background(), src, KeyCacheOptions{Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	v := NewVerifier("https://id.example", "pix-api", c, clock.now)
	urlMu.Lock()
	target = hang
	urlMu.Unlock()
	clock.add(11 * time.Minute) // past MaxAge

	start := time.Now()
	_, err = v.Verify(context.Background(), k.token(t, "kid-1", clock.now()))
	took := time.Since(start)
	if err != nil {
		t.Fatalf("known stale key, issuer hanging: %v", err)
	}
	if took > 2*time.Second {
		t.Errorf("a request with a known (stale) key waited %v for the hanging issuer's read", took.Round(100*time.Millisecond))
	}
}

// A request with a made-up kid whose client already went away waits on
// c.refreshing.Lock() for the read in progress, whatever its context says.
func TestReattackCancelledUnknownKidDoesNotWaitForTheRead(t *testing.T) {
	t.Parallel()
	k := newReattackJWKS(t, "kid-1")
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var reads int
	var mu sync.Mutex
	src := func(ctx context.Context) ([]byte, error) {
		mu.Lock()
		reads++
		n := reads
		mu.Unlock()
		if n > 1 {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return k.doc(t), nil
	}
	clock := &reattackClock{t: time.Now()}
	c, err := NewKeyCache(context.Background(), src, KeyCacheOptions{Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	v := NewVerifier("https://id.example", "pix-api", c, clock.now)
	clock.add(31 * time.Second)
	go func() { _, _ = v.Verify(context.Background(), k.token(t, "made-up-1", clock.now())) }()
	<-entered
	defer close(release)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	start := time.Now()
	go func() { _, _ = v.Verify(ctx, k.token(t, "made-up-"+strconv.Itoa(2), clock.now())); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Errorf("a request whose context is cancelled still waited %v (and goes on waiting) for another request's JWKS read", time.Since(start).Round(time.Millisecond))
	}
}
