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
	// of its Idempotency-Keys. The callers no token names (AdminToken,
	// Unauthenticated) have a subject under ReservedSubjectPrefix, which
	// no token may carry.
	Subject  string
	Scopes   []string
	Accounts []string
	// unrestricted is the caller of a service running without
	// authentication (AUTH_REQUIRED=false): every scope, every account.
	unrestricted bool
}

// ReservedSubjectPrefix starts the subjects of the callers no token names.
// The Verifier refuses a token whose sub starts with it (in any case), so
// that no token can pass for one of them: neither act as ADMIN_TOKEN's
// caller nor reach the Idempotency-Keys recorded under its subject.
const ReservedSubjectPrefix = "pix:"

// ReservedSubject reports whether sub is under ReservedSubjectPrefix, in
// any case: a subject no token may carry.
func ReservedSubject(sub string) bool {
	return len(sub) >= len(ReservedSubjectPrefix) && strings.EqualFold(sub[:len(ReservedSubjectPrefix)], ReservedSubjectPrefix)
}

// AdminToken is the caller of a request bearing ADMIN_TOKEN: an operator
// (scope pix:admin), acting for no account. The token names no person, so
// everyone who holds it is this one caller: they share its
// Idempotency-Keys (a key one of them used is a replay for the others),
// where operators with JWTs of scope pix:admin each have their own (their
// sub).
var AdminToken = Caller{Subject: ReservedSubjectPrefix + "admin-token", Scopes: []string{ScopeAdmin}}

// Unauthenticated is the caller of every request when authentication is
// off (development only): it may do anything, as anyone could.
var Unauthenticated = Caller{Subject: ReservedSubjectPrefix + "unauthenticated", unrestricted: true}

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
