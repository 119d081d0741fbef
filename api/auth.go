package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/pixbank/pix/internal/webhooksig"
)

// authenticWebhook reads a webhook body of at most limit bytes and checks
// that it comes from a PSP: a Standard Webhooks signature by one of the
// configured secrets (required, or verified when present). Only then does
// it look at the content type, so that an unauthenticated caller learns
// nothing about what we would accept. The body and the PSP's name go to the
// handler in the gin context.
func (h *handlers) authenticWebhook(limit int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		body, err := readBody(c.Writer, c.Request, limit)
		if err != nil {
			abortWithError(c, h.Logger, err)
			return
		}
		if h.RequireSignatures || webhooksig.HasSignature(c.Request.Header) {
			if h.Signatures == nil {
				// Configuration refuses this combination; never accept.
				abortWithError(c, h.Logger, webhooksig.ErrBadSignature)
				return
			}
			psp, err := h.Signatures.Verify(c.Request.Header, body)
			if err != nil {
				h.Logger.Warn("webhook signature refused", "path", c.Request.URL.Path, "webhook_id", c.GetHeader("webhook-id"),
					"remote_addr", c.ClientIP(), "error", err)
				abortWithError(c, h.Logger, err)
				return
			}
			c.Set(ctxPSP, psp)
		}
		if err := requireJSON(c.Request); err != nil {
			abortWithError(c, h.Logger, err)
			return
		}
		c.Set(ctxBody, body)
		c.Next()
	}
}

// requireClientCert refuses a webhook without a client certificate verified
// against the configured CA, when mutual TLS is configured. The TLS server
// asks every client for a certificate and verifies any it is given; only
// the PSP-facing routes require one, so that other clients of the same
// listener (the customer API, operators) need none.
func (h *handlers) requireClientCert(c *gin.Context) {
	if h.RequireClientCert && (c.Request.TLS == nil || len(c.Request.TLS.VerifiedChains) == 0) {
		abortWithError(c, h.Logger, errClientCertRequired)
		return
	}
	c.Next()
}

// requireAdmin lets through a request bearing ADMIN_TOKEN. Without a token
// configured the admin routes are disabled.
func (h *handlers) requireAdmin(c *gin.Context) {
	if h.AdminToken == "" {
		abortWithError(c, h.Logger, errAdminDisabled)
		return
	}
	given, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	// Comparing digests keeps the comparison constant-time whatever the
	// length of what was sent.
	want, got := sha256.Sum256([]byte(h.AdminToken)), sha256.Sum256([]byte(given))
	if !ok || subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
		c.Header("WWW-Authenticate", `Bearer realm="pix-admin"`)
		h.Logger.Warn("admin request refused", "path", c.Request.URL.Path, "remote_addr", c.ClientIP(), "token_sent", ok)
		abortWithError(c, h.Logger, errAdminUnauthorized)
		return
	}
	c.Next()
}

// Refusals of the HTTP layer's own access rules.
var (
	errClientCertRequired = &requestError{http.StatusUnauthorized, CodeClientCertRequired,
		"a client certificate issued by the configured CA is required (mutual TLS)"}
	errAdminDisabled = &requestError{http.StatusForbidden, CodeAdminDisabled,
		"the admin routes are disabled: ADMIN_TOKEN is not configured"}
	errAdminUnauthorized = &requestError{http.StatusUnauthorized, CodeUnauthorized,
		"a valid admin bearer token is required: Authorization: Bearer, then the ADMIN_TOKEN"}
)
