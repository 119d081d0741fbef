package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/webhooksig"
)

// authenticWebhook reads a webhook body of at most limit bytes and checks
// that it comes from a PSP (webhookPSP). Only then does it look at the
// content type, so that an unauthenticated caller learns nothing about
// what we would accept. The body and the PSP's name go to the handler in
// the gin context.
func (h *handlers) authenticWebhook(limit int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		body, err := readBody(c.Writer, c.Request, limit)
		if err != nil {
			abortWithError(c, h.Logger, err)
			return
		}
		psp, err := h.webhookPSP(c, body)
		if err != nil {
			h.Logger.Warn("webhook signature refused", "path", c.Request.URL.Path, "webhook_id", c.GetHeader("webhook-id"),
				"remote_addr", c.ClientIP(), "cert_psp", c.GetString(ctxCertPSP), "error", err)
			abortWithError(c, h.Logger, err)
			return
		}
		c.Set(ctxPSP, psp)
		if err := requireJSON(c.Request); err != nil {
			abortWithError(c, h.Logger, err)
			return
		}
		c.Set(ctxBody, body)
		c.Next()
	}
}

// webhookPSP says which PSP sent a webhook ("" for none: development,
// signatures not required), or why it is refused. The PSP of a client
// certificate listed in WEBHOOK_MTLS_PSPS (requireClientCert) needs no
// signature, as the API Pix sends none, unless WEBHOOK_SECRETS holds a
// secret of it: then it must sign too, with its own secret. Without a
// listed certificate, a signature by a known secret is required when
// RequireSignatures is set. A signature that is sent is always verified.
func (h *handlers) webhookPSP(c *gin.Context, body []byte) (string, error) {
	certPSP := c.GetString(ctxCertPSP)
	mustSign := h.Signatures.Signs(certPSP) || certPSP == "" && h.RequireSignatures
	if !mustSign && !webhooksig.HasSignature(c.Request.Header) {
		return certPSP, nil
	}
	if h.Signatures == nil {
		// Configuration refuses this combination; never accept.
		return "", webhooksig.ErrBadSignature
	}
	psp, err := h.Signatures.Verify(c.Request.Header, body)
	if err != nil {
		return "", err
	}
	if certPSP != "" && psp != certPSP {
		return "", errSignedByAnotherPSP
	}
	return psp, nil
}

// requireClientCert checks a webhook's client certificate, verified
// against the configured CA by the TLS server (which asks every client
// for one and verifies any it is given; only the PSP-facing routes require
// one, so that other clients of the same listener, the customer API and
// operators, need none). With mutual TLS configured a webhook must come
// with one; with WEBHOOK_MTLS_PSPS, one that names a PSP listed there,
// whose name goes in the gin context.
func (h *handlers) requireClientCert(c *gin.Context) {
	var leaf *x509.Certificate
	if c.Request.TLS != nil && len(c.Request.TLS.VerifiedChains) > 0 {
		leaf = c.Request.TLS.VerifiedChains[0][0]
	}
	if leaf == nil && (h.RequireClientCert || h.CertPSPs.Listed()) {
		abortWithError(c, h.Logger, errClientCertRequired)
		return
	}
	if leaf != nil && h.CertPSPs.Listed() {
		psp, err := h.CertPSPs.PSPOf(leaf)
		if err != nil {
			h.Logger.Warn("webhook client certificate refused", "path", c.Request.URL.Path, "subject", leaf.Subject.String(),
				"dns_names", leaf.DNSNames, "serial", leaf.SerialNumber.String(), "remote_addr", c.ClientIP(), "error", err)
			abortWithError(c, h.Logger, errClientCertNotListed)
			return
		}
		c.Set(ctxCertPSP, psp)
	}
	c.Next()
}

// TokenVerifier checks a bearer token and says who sent it (auth.Verifier).
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (auth.Caller, error)
}

// requireScope lets through a customer request whose bearer token is valid
// and grants scope; the caller goes to the handler in the gin context.
// With the customer routes open (AUTH_REQUIRED=false, development only)
// every request is auth.Unauthenticated.
func (h *handlers) requireScope(scope string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if h.OpenCustomerRoutes {
			c.Set(ctxCaller, auth.Unauthenticated)
			c.Next()
			return
		}
		caller, err := h.verifyBearer(c.Request)
		if err == nil && !caller.HasScope(scope) {
			err = insufficientScope(scope)
		}
		if err != nil {
			h.refused(c, caller, err)
			return
		}
		c.Set(ctxCaller, caller)
		c.Next()
	}
}

// verifyBearer returns the caller whose bearer token r carries.
func (h *handlers) verifyBearer(r *http.Request) (auth.Caller, error) {
	token, err := bearerToken(r.Header.Get("Authorization"))
	if err != nil {
		return auth.Caller{}, err
	}
	if h.Tokens == nil {
		// Configuration refuses this combination; never accept.
		return auth.Caller{}, invalidToken("no token issuer is configured", nil)
	}
	caller, err := h.Tokens.Verify(r.Context(), token)
	var tokenErr *auth.TokenError
	switch {
	case errors.As(err, &tokenErr):
		return auth.Caller{}, invalidToken(tokenErr.Reason, err)
	case errors.Is(err, auth.ErrKeysUnavailable):
		return auth.Caller{}, fmt.Errorf("%w: %w", errIssuerUnavailable, err)
	case err != nil:
		return auth.Caller{}, invalidToken("the token is not valid", err)
	case auth.ReservedSubject(caller.Subject):
		// auth.Verifier refuses these already; whatever verifies the
		// tokens, none passes for the service's own callers.
		return auth.Caller{}, invalidToken("the token's subject (sub) is reserved", nil)
	}
	return caller, nil
}

// bearerToken is the token of an Authorization header (RFC 6750 §2.1; the
// scheme is case-insensitive).
func bearerToken(header string) (string, error) {
	if header == "" {
		return "", errNoBearerToken
	}
	scheme, token, ok := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", invalidToken("the Authorization header must be: Bearer <token>", nil)
	}
	return token, nil
}

// callerOf is the caller requireScope let through.
func callerOf(c *gin.Context) auth.Caller {
	return c.MustGet(ctxCaller).(auth.Caller)
}

// refused logs an access refusal (who, what, why) and answers it.
func (h *handlers) refused(c *gin.Context, caller auth.Caller, err error) {
	h.Logger.WarnContext(c.Request.Context(), "request refused by access control", append(logAttrs(c),
		"path", c.Request.URL.Path, "method", c.Request.Method, "sub", caller.Subject, "remote_addr", c.ClientIP(), "error", err)...)
	abortWithError(c, h.Logger, err)
}

// requireAdmin lets through a request bearing ADMIN_TOKEN (its caller
// auth.AdminToken), or a valid token with scope pix:admin (its caller the
// token's); the caller goes to the handler in the gin context, as
// requireScope's does. With neither configured the admin routes are
// disabled.
func (h *handlers) requireAdmin(c *gin.Context) {
	caller, err := h.operator(c.Request)
	if err != nil {
		h.refused(c, caller, err)
		return
	}
	c.Set(ctxCaller, caller)
	c.Next()
}

// authorizeAdmin says why r may not call an admin route, or nil.
func (h *handlers) authorizeAdmin(r *http.Request) error {
	_, err := h.operator(r)
	return err
}

// operator is the operator who sent r: ADMIN_TOKEN's caller, or that of a
// valid token with scope pix:admin; or why r is refused (with the caller
// its token named, if any, for the log).
func (h *handlers) operator(r *http.Request) (auth.Caller, error) {
	if h.AdminToken == "" && h.Tokens == nil {
		return auth.Caller{}, errAdminDisabled
	}
	token, err := bearerToken(r.Header.Get("Authorization"))
	if err != nil {
		return auth.Caller{}, err
	}
	if h.AdminToken != "" {
		// Comparing digests keeps the comparison constant-time whatever the
		// length of what was sent.
		want, got := sha256.Sum256([]byte(h.AdminToken)), sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(want[:], got[:]) == 1 {
			return auth.AdminToken, nil
		}
	}
	if h.Tokens == nil {
		return auth.Caller{}, invalidToken("not the admin token", nil)
	}
	caller, err := h.verifyBearer(r)
	if err != nil {
		return auth.Caller{}, err
	}
	if !caller.HasScope(auth.ScopeAdmin) {
		return caller, insufficientScope(auth.ScopeAdmin)
	}
	return caller, nil
}

// bearerRealm names what the tokens protect in WWW-Authenticate.
const bearerRealm = "pix"

// bearerError is a refusal of access control: its status, its code, and
// the WWW-Authenticate challenge that goes with it (RFC 6750 §3).
type bearerError struct {
	status    int
	code      string
	msg       string
	challenge string
	cause     error // logged, never answered
}

func (e *bearerError) Error() string {
	if e.cause != nil {
		return e.msg + ": " + e.cause.Error()
	}
	return e.msg
}

func (e *bearerError) Unwrap() error { return e.cause }

// errNoBearerToken: no credentials at all. RFC 6750 §3.1: the challenge
// then names no error.
var errNoBearerToken = &bearerError{http.StatusUnauthorized, CodeUnauthorized,
	"a bearer token is required: Authorization: Bearer <token>", `Bearer realm="` + bearerRealm + `"`, nil}

// invalidToken: the token is malformed, expired, not ours, or its
// signature fails. description is told to the caller; cause is logged.
func invalidToken(description string, cause error) error {
	return &bearerError{http.StatusUnauthorized, CodeUnauthorized, "invalid bearer token: " + description,
		fmt.Sprintf(`Bearer realm=%q, error="invalid_token", error_description=%q`, bearerRealm, description), cause}
}

// insufficientScope: the token is valid but does not grant scope.
func insufficientScope(scope string) error {
	return &bearerError{http.StatusForbidden, CodeInsufficientScope, "the token does not grant the scope " + scope,
		fmt.Sprintf(`Bearer realm=%q, error="insufficient_scope", scope=%q`, bearerRealm, scope), nil}
}

// errForbiddenAccount: a valid token that does not grant the account a
// request would move money from. RFC 6750 has no error of its own for it:
// the token's grant is too narrow, so insufficient_scope.
var errForbiddenAccount = &bearerError{http.StatusForbidden, CodeForbiddenAccount,
	"the token does not grant this account; nothing was debited",
	`Bearer realm="` + bearerRealm + `", error="insufficient_scope", error_description="the token does not grant this account"`, nil}

// Refusals of the HTTP layer's own access rules.
var (
	// errIssuerUnavailable: the token names a key we don't hold and the
	// issuer can't be asked for it: our problem, retryable, not the
	// caller's (not a 401).
	errIssuerUnavailable = &requestError{http.StatusServiceUnavailable, CodeUnavailable,
		"the token issuer's keys can't be read right now; nothing was done, retry later"}
	errClientCertRequired = &requestError{http.StatusUnauthorized, CodeClientCertRequired,
		"a client certificate issued by the configured CA is required (mutual TLS)"}
	// errClientCertNotListed: a certificate the CA issued, of no PSP
	// WEBHOOK_MTLS_PSPS lists (the CA issues certificates to others too).
	errClientCertNotListed = &requestError{http.StatusUnauthorized, CodeClientCertRequired,
		"a client certificate of a PSP this service takes webhooks from is required (mutual TLS); this one is not listed; nothing was stored"}
	// errSignedByAnotherPSP: a signature by a known secret, but of another
	// PSP than the one whose client certificate came with it.
	errSignedByAnotherPSP = fmt.Errorf("%w: signed with the secret of another PSP than the client certificate's", webhooksig.ErrBadSignature)
	errAdminDisabled      = &requestError{http.StatusForbidden, CodeAdminDisabled,
		"the admin routes are disabled: neither ADMIN_TOKEN nor a token issuer is configured"}
)
