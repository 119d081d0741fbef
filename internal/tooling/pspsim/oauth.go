package pspsim

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The API Pix's OAuth scopes the simulator knows.
const (
	ScopePixRead      = "pix.read"
	ScopePixWrite     = "pix.write"
	ScopeWebhookRead  = "webhook.read"
	ScopeWebhookWrite = "webhook.write"
)

// AllScopes are every scope the simulator knows, the default grant.
var AllScopes = []string{ScopePixRead, ScopePixWrite, ScopeWebhookRead, ScopeWebhookWrite}

// DefaultTokenLifetime is how long a token is valid when OAuthOptions
// does not say.
const DefaultTokenLifetime = 5 * time.Minute

// TokenPath is the token endpoint's path.
const TokenPath = "/oauth/token"

// OAuthOptions turn on OAuth 2.0 (RFC 6749 §4.4 client credentials, the
// client authenticated by HTTP Basic, §2.3.1): the token endpoint POST
// /oauth/token, and a bearer token (RFC 6750) with the operation's scope
// on every API route (the API Pix's and the transfer interface's; the
// simulator's control routes stay open).
type OAuthOptions struct {
	// Clients are the accepted client ids, each with its secret. At least
	// one.
	Clients map[string]string
	// TokenLifetime is how long a token is valid, by Options.Now (a test
	// expires tokens by moving its clock); 0 means DefaultTokenLifetime.
	TokenLifetime time.Duration
	// Scopes are what a client may be granted; a token request that names
	// no scope gets them all. nil means AllScopes.
	Scopes []string
}

// oauthState is the token endpoint's and the API's OAuth state, guarded by
// the simulator's lock.
type oauthState struct {
	clients  map[string]string
	lifetime time.Duration
	scopes   []string
	tokens   map[string]issuedToken
	// endpoint is the token endpoint's simulated outage, if any.
	endpoint TokenEndpointFault
	// endpointUntil is when it ends, by Options.Now; zero: when cleared.
	endpointUntil time.Time
}

// issuedToken is what a bearer token grants, until when.
type issuedToken struct {
	clientID  string
	scopes    []string
	expiresAt time.Time
}

func newOAuthState(o *OAuthOptions) (*oauthState, error) {
	if len(o.Clients) == 0 {
		return nil, errors.New("oauth: at least one client id and secret")
	}
	st := &oauthState{clients: make(map[string]string, len(o.Clients)), lifetime: o.TokenLifetime,
		scopes: slices.Clone(o.Scopes), tokens: make(map[string]issuedToken)}
	for id, secret := range o.Clients {
		if id == "" || secret == "" {
			return nil, errors.New("oauth: a client id and its secret must not be empty")
		}
		st.clients[id] = secret
	}
	if st.lifetime <= 0 {
		st.lifetime = DefaultTokenLifetime
	}
	if st.scopes == nil {
		st.scopes = slices.Clone(AllScopes)
	}
	for _, sc := range st.scopes {
		if !slices.Contains(AllScopes, sc) {
			return nil, fmt.Errorf("oauth: unknown scope %q, want some of %s", sc, strings.Join(AllScopes, " "))
		}
	}
	return st, nil
}

// tokenAnswer is the token endpoint's success (RFC 6749 §5.1).
type tokenAnswer struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	Scope       string `json:"scope"`
}

// oauthError is the token endpoint's error (RFC 6749 §5.2).
type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

func writeOAuthError(w http.ResponseWriter, status int, code, description string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="pspsim"`)
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, status, oauthError{Error: code, Description: description})
}

// handleToken is the token endpoint: client credentials, the client
// authenticated by HTTP Basic (its id and secret form-urlencoded first,
// RFC 6749 §2.3.1). Neither the secret nor the token is ever logged.
func (s *Simulator) handleToken(w http.ResponseWriter, r *http.Request) {
	switch s.tokenEndpointDown() {
	case TokenEndpointCut:
		note(r, slog.String("outcome", "token_endpoint_cut"))
		loseAnswer(r)
	case TokenEndpointUnavailable:
		note(r, slog.String("outcome", "token_endpoint_unavailable"))
		writeOAuthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the token endpoint is down (simulated)")
		return
	}
	id, secret, ok := basicClient(r)
	if ok {
		note(r, slog.String("client_id", id))
	}
	if !ok || !s.clientValid(id, secret) {
		note(r, slog.String("outcome", "invalid_client"))
		writeOAuthError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed: HTTP Basic with a known client id and its secret")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if err := r.ParseForm(); err != nil {
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "the body is not a form")
		return
	}
	switch grant := r.PostForm.Get("grant_type"); grant {
	case "client_credentials":
	case "":
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "grant_type is required")
		return
	default:
		note(r, slog.String("outcome", "unsupported_grant_type"))
		writeOAuthError(w, http.StatusBadRequest, "unsupported_grant_type", "only client_credentials is supported")
		return
	}
	answer, err := s.issueToken(id, strings.Fields(r.PostForm.Get("scope")))
	if err != nil {
		note(r, slog.String("outcome", "invalid_scope"))
		writeOAuthError(w, http.StatusBadRequest, "invalid_scope", err.Error())
		return
	}
	note(r, slog.String("outcome", "token_issued"), slog.String("scope", answer.Scope))
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, answer)
}

// basicClient is the request's HTTP Basic client id and secret, each
// form-urlencoded as RFC 6749 §2.3.1 wants.
func basicClient(r *http.Request) (id, secret string, ok bool) {
	rawID, rawSecret, ok := r.BasicAuth()
	if !ok {
		return "", "", false
	}
	id, err := url.QueryUnescape(rawID)
	if err != nil {
		return "", "", false
	}
	secret, err = url.QueryUnescape(rawSecret)
	if err != nil {
		return "", "", false
	}
	return id, secret, id != ""
}

// clientValid reports whether secret is client id's, in constant time.
func (s *Simulator) clientValid(id, secret string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	want, ok := s.oauth.clients[id]
	return ok && subtle.ConstantTimeCompare([]byte(want), []byte(secret)) == 1
}

// issueToken makes a token for client id with the scopes asked for (all
// the grantable ones when none), refusing a scope it may not have. It
// forgets the expired tokens.
func (s *Simulator) issueToken(id string, asked []string) (tokenAnswer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.oauth
	granted := slices.Clone(st.scopes)
	if len(asked) > 0 {
		for _, sc := range asked {
			if !slices.Contains(st.scopes, sc) {
				return tokenAnswer{}, fmt.Errorf("scope %q is not granted to this client (granted: %s)", sc, strings.Join(st.scopes, " "))
			}
		}
		granted = slices.Compact(slices.Sorted(slices.Values(asked)))
	}
	now := s.now()
	for tok, it := range st.tokens {
		if !now.Before(it.expiresAt) {
			delete(st.tokens, tok)
		}
	}
	b := make([]byte, 32)
	// crypto/rand.Read never returns an error.
	_, _ = rand.Read(b)
	token := base64.RawURLEncoding.EncodeToString(b)
	st.tokens[token] = issuedToken{clientID: id, scopes: granted, expiresAt: now.Add(st.lifetime)}
	// expires_in is whole seconds: rounded up, so that a lifetime under a
	// second (a test's) is not announced as already expired.
	expiresIn := int64((st.lifetime + time.Second - 1) / time.Second)
	return tokenAnswer{AccessToken: token, TokenType: "Bearer", ExpiresIn: expiresIn, Scope: strings.Join(granted, " ")}, nil
}

// authorize runs next only for a request with a bearer token that is
// valid now and grants scope (with OAuth on; without, always): no token,
// or an expired or unknown one, is 401 with the RFC 6750 challenge; a
// token without the scope is 403 AcessoNegado.
func (s *Simulator) authorize(scope string, next http.HandlerFunc) http.HandlerFunc {
	if s.oauth == nil {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || strings.TrimSpace(token) == "" {
			note(r, slog.String("outcome", "no_token"))
			// RFC 6750 §3.1: no error code when the request has no
			// credentials at all.
			w.Header().Set("WWW-Authenticate", `Bearer realm="pspsim"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		it, valid := s.tokenValid(token)
		if !valid {
			writeInvalidToken(w, r, "the token is expired, revoked or unknown")
			return
		}
		note(r, slog.String("client_id", it.clientID))
		if !slices.Contains(it.scopes, scope) {
			note(r, slog.String("outcome", "insufficient_scope"))
			w.Header().Set("WWW-Authenticate", `Bearer realm="pspsim", error="insufficient_scope", scope="`+scope+`"`)
			writeProblem(w, http.StatusForbidden, ProblemAcessoNegado, "the token does not grant the scope "+scope)
			return
		}
		next(w, r)
	}
}

// tokenValid is what token grants, if it is valid now.
func (s *Simulator) tokenValid(token string) (issuedToken, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.oauth.tokens[token]
	return it, ok && s.now().Before(it.expiresAt)
}

// writeInvalidToken answers 401 with RFC 6750's invalid_token challenge:
// the credentials are refused (expired, revoked, unknown; or an
// unauthorized behaviour).
func writeInvalidToken(w http.ResponseWriter, r *http.Request, description string) {
	note(r, slog.String("outcome", "invalid_token"))
	w.Header().Set("WWW-Authenticate", `Bearer realm="pspsim", error="invalid_token", error_description="`+description+`"`)
	w.WriteHeader(http.StatusUnauthorized)
}

// SetClientSecret makes secret the one the token endpoint accepts for
// client id from now on (a rotation; a new id is a new client). With
// revokeTokens, the tokens issued to the client stop being valid at once;
// otherwise they stay valid until they expire, as with a real rotation.
// An error when OAuth is off or secret is empty.
func (s *Simulator) SetClientSecret(id, secret string, revokeTokens bool) error {
	if s.oauth == nil {
		return errors.New("oauth is off: no client to rotate")
	}
	if id == "" || secret == "" {
		return errors.New("a client id and its secret must not be empty")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oauth.clients[id] = secret
	if revokeTokens {
		for tok, it := range s.oauth.tokens {
			if it.clientID == id {
				delete(s.oauth.tokens, tok)
			}
		}
	}
	return nil
}
