package psp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Config is how the bank reaches its PSP's API Pix (docs/configuration.md,
// "PSP client"): config.Config.PSP builds it from the PSP_* variables, so
// that pixd and pixctl build the same client.
type Config struct {
	// BaseURL is the API's base, which may carry a path as the spec's
	// servers do ("https://psp.example/api/v2"): the routes are appended to
	// it.
	BaseURL string
	// Timeout bounds each call (and each token request); <= 0 leaves a
	// call bounded by its context alone, a token request by
	// defaultTokenTimeout.
	Timeout time.Duration

	// TokenURL is the OAuth 2.0 token endpoint (RFC 6749 §4.4, client
	// credentials). "" sends no token: a simulator without authentication.
	TokenURL string
	ClientID string
	// ClientSecret, or ClientSecretFile: the file is read again at each
	// token request, so that a secret fixed in the file needs no restart.
	// Never both.
	ClientSecret     string
	ClientSecretFile string
	// Scopes asked for (DefaultScopes when nil).
	Scopes []string

	// CertFile and KeyFile are our client certificate and key (PEM),
	// presented to the API and to the token endpoint (mutual TLS); both or
	// neither.
	CertFile, KeyFile string
	// CAFile holds the PSP's server CA certificates (PEM); "" trusts the
	// system roots.
	CAFile string
}

// DefaultScopes are the API Pix scopes the bank's calls need: pix.read (GET
// /pix and a devolução's record), pix.write (PUT a devolução),
// webhook.read and webhook.write (the webhook registration).
var DefaultScopes = []string{"pix.read", "pix.write", "webhook.read", "webhook.write"}

// Authenticated reports whether the client sends an OAuth 2.0 token.
func (cfg Config) Authenticated() bool { return cfg.TokenURL != "" }

// defaultTokenTimeout bounds a token request when Config.Timeout does not.
// A token request is shared by every call waiting for a token, and is
// bounded by none of their contexts: it must end on its own.
const defaultTokenTimeout = 30 * time.Second

// tokenEarlyExpiry starts a token's renewal this long before its
// expires_in (at most half its lifetime: a token of 20 s is renewed after
// 10 s, not at each call). The token in hand keeps serving while the
// renewal is under way, or failing, until tokenExpirySafety before its
// expiry: a blip of the token endpoint costs no call while a token is good.
const tokenEarlyExpiry = 30 * time.Second

// tokenExpirySafety is how long before its expiry (at most a quarter of its
// lifetime) a token is no longer sent: it must not expire between our check
// and the PSP's. Past it, calls wait for the new token.
const tokenExpirySafety = 5 * time.Second

// unstatedTokenLifetime is how long a token serves whose expires_in is 0 or
// less (an endpoint's bug): short, yet not one token request per call.
// A token without expires_in serves until the API refuses it (401).
const unstatedTokenLifetime = 10 * time.Second

// tokenRetryAfter is how long a token request that failed for want of an
// answer (the endpoint down, a timeout) is the answer of every call: the
// calls of a busy worker do not each ask a dead endpoint again at once.
// A refusal (a wrong secret) is not kept: fixed, it is taken at the next
// call.
const tokenRetryAfter = time.Second

// check reports what is wrong with cfg's combination of settings. A URL is
// quoted redacted (url.URL.Redacted): a password in it must not reach the
// start's log line.
func (cfg Config) check() error {
	var errs []error
	if u, err := parseURL(cfg.BaseURL); err != nil {
		errs = append(errs, fmt.Errorf("psp base url: %w", err))
	} else if !httpURL(u) || strings.ContainsAny(cfg.BaseURL, "?#") {
		// "?" or "#" even with nothing after (url.Parse leaves RawQuery and
		// Fragment empty): every route appended would be a query or a
		// fragment, never sent as the path.
		errs = append(errs, fmt.Errorf("psp base url %q: want http(s)://host[:port][/path], without credentials, query or fragment", u.Redacted()))
	} else if cfg.TokenURL != "" && !private(u) {
		errs = append(errs, fmt.Errorf("psp base url %q: a bearer token is never sent over plain http (https, or a loopback address)", u.Redacted()))
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		errs = append(errs, errors.New("psp client certificate: set both the certificate and its key, or neither"))
	}
	if cfg.TokenURL == "" {
		if cfg.ClientID != "" || cfg.ClientSecret != "" || cfg.ClientSecretFile != "" || cfg.Scopes != nil {
			errs = append(errs, errors.New("psp oauth: a client id, secret or scopes without a token url would never be sent"))
		}
		return errors.Join(errs...)
	}
	if u, err := parseURL(cfg.TokenURL); err != nil {
		errs = append(errs, fmt.Errorf("psp oauth token url: %w", err))
	} else if !httpURL(u) || strings.ContainsRune(cfg.TokenURL, '#') {
		errs = append(errs, fmt.Errorf("psp oauth token url %q: want http(s)://host[:port]/path, without credentials or fragment", u.Redacted()))
	} else if !private(u) {
		errs = append(errs, fmt.Errorf("psp oauth token url %q: the client secret is never sent over plain http (https, or a loopback address)", u.Redacted()))
	}
	switch {
	case cfg.ClientID == "":
		errs = append(errs, errors.New("psp oauth: a token url needs a client id"))
	case strings.ContainsAny(cfg.ClientID, ":\r\n"):
		errs = append(errs, errors.New("psp oauth: the client id must not hold a colon or a line break"))
	}
	switch {
	case cfg.ClientSecret != "" && cfg.ClientSecretFile != "":
		errs = append(errs, errors.New("psp oauth: a client secret or a client secret file, not both"))
	case cfg.ClientSecret == "" && cfg.ClientSecretFile == "":
		errs = append(errs, errors.New("psp oauth: a token url needs a client secret or a client secret file"))
	case cfg.ClientSecretFile != "":
		if _, err := readSecretFile(cfg.ClientSecretFile); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range cfg.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
			errs = append(errs, fmt.Errorf("psp oauth scope %q: not a scope token (RFC 6749 §3.3)", s))
		}
	}
	return errors.Join(errs...)
}

// parseURL is url.Parse with an error that does not quote the URL, which
// may hold a password.
func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return nil, urlErr.Err
	}
	return u, err
}

// httpURL reports whether u is an absolute http(s) URL without
// credentials: what every URL of the PSP's, and our webhook's, must be.
func httpURL(u *url.URL) bool {
	return (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}

// private reports whether a URL's traffic may go in clear: https, or a
// loopback host (a simulator on this machine).
func private(u *url.URL) bool {
	if u.Scheme == "https" {
		return true
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tlsConfig is the TLS of every connection to the PSP, the API's and the
// token endpoint's: our client certificate when there is one, the PSP's CA
// (or the system roots).
func (cfg Config) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("psp client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("psp ca file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("psp ca file %s: no PEM certificate in it", cfg.CAFile)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// readSecretFile reads a client secret from its file, its trailing line
// break trimmed, as config reads every *_FILE secret. Its errors name the
// file, never its content.
func readSecretFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("psp oauth client secret file: %w", err)
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" {
		return "", fmt.Errorf("psp oauth client secret file %s: empty", path)
	}
	return s, nil
}

// TokenError is a token the client could not get from the OAuth 2.0 token
// endpoint. It keeps the endpoint's status and its RFC 6749 §5.2 error code
// (one of the registered codes only), never the endpoint's body nor its
// error_description: they may echo the client's secret, and this error is
// logged, traced and carried in Temporal failures. No call was sent to the
// API: no money moved.
//
// Refused (Transient false: a 4xx, an invalid_client or invalid_scope, a
// secret file that can't be read) is a refused request for Classify
// (AnswerRequestRefused: counted, retried with backoff, alerting); down
// (Transient: no answer, 5xx, 408, 429, an answer that is no token) is
// ErrTransient.
type TokenError struct {
	// StatusCode is the token endpoint's HTTP status; 0 when it did not
	// answer, or no request was sent.
	StatusCode int
	// Code is the RFC 6749 error code (invalid_client, invalid_scope, ...)
	// when the endpoint sent a registered one, else "".
	Code string
	// Transient: the endpoint is down or its answer is no token: retry.
	Transient bool
	// detail is our own words (never the endpoint's body).
	detail string
	// cause is the transport's error of a request without an answer.
	cause error
}

func (e *TokenError) Error() string {
	what := "psp token endpoint refused our client"
	if e.Transient {
		what = "psp token endpoint unavailable"
	}
	if e.StatusCode != 0 {
		what += fmt.Sprintf(" (http %d", e.StatusCode)
		if e.Code != "" {
			what += ", " + e.Code
		}
		what += ")"
	} else if e.Code != "" {
		what += " (" + e.Code + ")"
	}
	if e.detail != "" {
		what += ": " + e.detail
	}
	if e.cause != nil {
		what += ": " + e.cause.Error()
	}
	return what
}

// Unwrap makes a transient token error ErrTransient, and keeps the
// transport's cause (a timeout is context.DeadlineExceeded).
func (e *TokenError) Unwrap() []error {
	var errs []error
	if e.Transient {
		errs = append(errs, ErrTransient)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

// tokenErrorCodes are RFC 6749 §5.2's error codes: any other value of an
// answer's "error" is dropped, since it could be anything, the secret too.
var tokenErrorCodes = []string{"invalid_request", "invalid_client", "invalid_grant", "unauthorized_client",
	"unsupported_grant_type", "invalid_scope"}

// tokenError turns what the oauth2 library returned into a TokenError,
// keeping nothing of the endpoint's body.
func tokenError(err error) *TokenError {
	var retrieve *oauth2.RetrieveError
	if errors.As(err, &retrieve) {
		e := &TokenError{}
		if retrieve.Response != nil {
			e.StatusCode = retrieve.Response.StatusCode
		}
		if slices.Contains(tokenErrorCodes, retrieve.ErrorCode) {
			e.Code = retrieve.ErrorCode
		}
		code := e.StatusCode
		switch {
		case transientStatus(code):
			e.Transient = true
		case code >= 300 && code < 400:
			e.Transient, e.detail = true, "redirected (not followed)"
		}
		return e
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		// No answer: the transport's own error (a refused connection, a
		// timeout, a certificate the CA did not issue), without the URL,
		// which the configuration holds.
		return &TokenError{Transient: true, cause: urlErr.Err}
	}
	// A 2xx that is no token (no access_token, a body that does not
	// parse): the library's message may quote it; ours does not.
	return &TokenError{Transient: true, detail: "its answer is no token"}
}

// tokens gives every call the one token of the moment, renewed from renewAt.
// The calls that need a new token at the same time share one request to
// the endpoint (one at a time), each waiting no longer than its own
// context; the request itself, shared by all, is bounded by its own
// timeout (tokenFetcher) and ends on its own, the waiters gone or not.
// drop forgets the token after a 401.
type tokens struct {
	fetch oauth2.TokenSource // asks the endpoint at each call
	now   func() time.Time

	mu      sync.Mutex
	tok     *oauth2.Token // nil: none yet, or dropped
	renewAt time.Time     // zero: tok serves until dropped; from it, a renewal starts
	lastUse time.Time     // from it, tok is no longer sent: calls wait for a new one
	gen     uint64        // counts the tokens fetched: a 401 drops only the token it got
	pending *tokenFetch   // the request under way, nil when none
	failed  *tokenFetch   // the last request, when it got no answer, until retryAt
	retryAt time.Time
}

// tokenFetch is one request to the token endpoint; done is closed once tok,
// gen and err are set.
type tokenFetch struct {
	done chan struct{}
	tok  *oauth2.Token
	gen  uint64
	err  error
}

func newTokens(fetch oauth2.TokenSource) *tokens {
	return &tokens{fetch: fetch, now: time.Now}
}

// token returns the current token and its generation. Past its renewAt it
// starts a renewal (one at a time, at most one per tokenRetryAfter while
// they fail) and still returns the token in hand; past its lastUse, or
// with none, it waits for a new one. ctx bounds the wait only: when it ends
// first, its error is returned, and the request goes on for the next calls.
func (t *tokens) token(ctx context.Context) (*oauth2.Token, uint64, error) {
	t.mu.Lock()
	now := t.now()
	if t.tok != nil && (t.renewAt.IsZero() || now.Before(t.lastUse)) {
		tok, gen := t.tok, t.gen
		if !t.renewAt.IsZero() && !now.Before(t.renewAt) && t.pending == nil && (t.failed == nil || !now.Before(t.retryAt)) {
			t.start()
		}
		t.mu.Unlock()
		return tok, gen, nil
	}
	f := t.pending
	if f == nil && t.failed != nil && now.Before(t.retryAt) && errors.Is(t.failed.err, ErrTransient) {
		f = t.failed
	}
	if f == nil {
		f = t.start()
	}
	t.mu.Unlock()
	select {
	case <-f.done:
		return f.tok, f.gen, f.err
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
}

// start begins a request to the token endpoint; t.mu is held.
func (t *tokens) start() *tokenFetch {
	f := &tokenFetch{done: make(chan struct{})}
	t.pending = f
	// Owned by t, bounded by the fetcher's timeout: it ends on its own.
	go t.run(f)
	return f
}

// run makes the request f and keeps its token, or its failure until
// tokenRetryAfter: a renewal that fails is not asked again by every call
// while the token in hand serves, nor is an endpoint that did not answer
// by every call waiting for a token (a refusal is not kept for those: a
// secret fixed is taken at the next call).
func (t *tokens) run(f *tokenFetch) {
	tok, err := t.fetch.Token()
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.pending = nil
	if err != nil {
		f.err = err
		t.failed, t.retryAt = f, now.Add(tokenRetryAfter)
	} else {
		t.gen++
		t.tok, t.failed = tok, nil
		t.renewAt, t.lastUse = renewal(tok, now)
		f.tok, f.gen = tok, t.gen
	}
	close(f.done)
}

// renewal is when a token fetched at now starts being renewed
// (tokenEarlyExpiry before its expiry, or half-way through a shorter
// lifetime) and when it is last sent (tokenExpirySafety before its expiry,
// or three quarters through a shorter lifetime); both zero (never) when
// the endpoint gave no expires_in.
func renewal(tok *oauth2.Token, now time.Time) (renewAt, lastUse time.Time) {
	if tok.Expiry.IsZero() {
		return time.Time{}, time.Time{}
	}
	lifetime := tok.Expiry.Sub(now)
	if lifetime <= 0 {
		lifetime = unstatedTokenLifetime
	}
	return now.Add(lifetime - min(tokenEarlyExpiry, lifetime/2)), now.Add(TokenSentFor(lifetime))
}

// TokenSentFor is how long after its fetch a token that lives lifetime is
// still sent, however its renewal fares: tokenExpirySafety less than its
// lifetime, or three quarters of a shorter one. A token fetched before a
// token endpoint's outage serves no call after it.
func TokenSentFor(lifetime time.Duration) time.Duration {
	return lifetime - min(tokenExpirySafety, lifetime/4)
}

// drop forgets the token of generation gen, which the API refused (401):
// the next call fetches a new one. Calls that got the same token and its
// 401 at once drop it once, and share the next fetch.
func (t *tokens) drop(gen uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gen == gen {
		t.tok = nil
	}
}

// tokenFetcher asks the token endpoint for a new token at each call
// (client credentials, client authentication by HTTP Basic), through the
// client's own *http.Client (mutual TLS), reading the secret file anew.
type tokenFetcher struct {
	cfg     Config
	hc      *http.Client
	timeout time.Duration
}

// tokenRoute names the token request's span.
const tokenRoute = "{oauth token}"

func (f *tokenFetcher) Token() (*oauth2.Token, error) {
	secret := f.cfg.ClientSecret
	if f.cfg.ClientSecretFile != "" {
		var err error
		if secret, err = readSecretFile(f.cfg.ClientSecretFile); err != nil {
			return nil, &TokenError{detail: err.Error()}
		}
	}
	cc := clientcredentials.Config{
		ClientID:     f.cfg.ClientID,
		ClientSecret: secret,
		TokenURL:     f.cfg.TokenURL,
		Scopes:       f.cfg.Scopes,
		AuthStyle:    oauth2.AuthStyleInHeader,
	}
	if cc.Scopes == nil {
		cc.Scopes = DefaultScopes
	}
	// Shared by every call waiting for a token, so bounded by none of
	// theirs: by its own timeout.
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	ctx = context.WithValue(ctx, routeKey{}, tokenRoute)
	ctx = context.WithValue(ctx, oauth2.HTTPClient, f.hc)
	tok, err := cc.Token(ctx)
	if err != nil {
		return nil, tokenError(err)
	}
	return tok, nil
}
