package auth

import (
	"slices"
	"strings"
)

// Scopes a token may carry (space-separated in its scope claim).
const (
	ScopeRead  = "pix:read"
	ScopeWrite = "pix:write"
	ScopeAdmin = "pix:admin"
)

// Caller is who sent a request, as its verified token says.
type Caller struct {
	// Subject is the token's sub: the caller's identity, and the namespace
	// of its Idempotency-Keys.
	Subject  string
	Scopes   []string
	Accounts []string
	// unrestricted is the caller of a service running without
	// authentication (AUTH_REQUIRED=false): every scope, every account.
	unrestricted bool
}

// Unauthenticated is the caller of every request when authentication is
// off (development only): it may do anything, as anyone could.
var Unauthenticated = Caller{Subject: "unauthenticated", unrestricted: true}

// HasScope reports whether the caller's token grants scope.
func (c Caller) HasScope(scope string) bool {
	return c.unrestricted || slices.Contains(c.Scopes, scope)
}

// MayActFor reports whether the caller may act for account: it is in the
// token's accounts claim. An empty account is nobody's.
func (c Caller) MayActFor(account string) bool {
	if account == "" {
		return false
	}
	return c.unrestricted || slices.Contains(c.Accounts, account)
}

// parseScopes splits a scope claim (RFC 8693 §4.2: space-separated).
func parseScopes(claim string) []string {
	return strings.Fields(claim)
}
