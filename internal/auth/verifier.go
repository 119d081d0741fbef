package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Leeway is the clock skew allowed on exp, nbf and iat.
const Leeway = 60 * time.Second

// Algorithms are the only signature algorithms accepted. "none" and every
// HMAC algorithm are refused: a public key must never serve as an HMAC
// secret (algorithm confusion).
var Algorithms = []string{"RS256", "ES256", "EdDSA"}

// TokenError is a token refused: Reason is what the caller is told
// (RFC 6750's error_description), in words of ours, never a library's.
type TokenError struct {
	Reason string
	err    error
}

func (e *TokenError) Error() string {
	if e.err == nil {
		return "invalid bearer token: " + e.Reason
	}
	return "invalid bearer token: " + e.Reason + ": " + e.err.Error()
}

func (e *TokenError) Unwrap() error { return e.err }

// errUnknownKey: the token's kid is not among the issuer's keys.
var errUnknownKey = errors.New("unknown key id")

// claims are the members of a token we read.
type claims struct {
	jwt.RegisteredClaims
	Scope    string   `json:"scope"`
	Accounts []string `json:"accounts"`
}

// Verifier checks bearer tokens of one issuer and audience.
type Verifier struct {
	keys   *KeyCache
	parser *jwt.Parser
	// unconfigured: built without an issuer or an audience, which
	// golang-jwt would take as "don't check": it refuses every token.
	unconfigured bool
}

// NewVerifier checks tokens whose iss is issuer and whose aud contains
// audience, signed by one of keys. now may be nil (time.Now).
func NewVerifier(issuer, audience string, keys *KeyCache, now func() time.Time) *Verifier {
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(Algorithms),
		jwt.WithIssuer(issuer),
		jwt.WithAudience(audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(Leeway),
		jwt.WithStrictDecoding(),
	}
	if now != nil {
		opts = append(opts, jwt.WithTimeFunc(now))
	}
	return &Verifier{keys: keys, parser: jwt.NewParser(opts...), unconfigured: issuer == "" || audience == "" || keys == nil}
}

// Verify returns the caller a token names, a *TokenError for a token we
// refuse, or ErrKeysUnavailable when the issuer's keys can't be read.
func (v *Verifier) Verify(ctx context.Context, raw string) (Caller, error) {
	if v.unconfigured {
		return Caller{}, &TokenError{Reason: "no issuer, audience or keys are configured to check it against"}
	}
	var c claims
	var keysErr error
	_, err := v.parser.ParseWithClaims(raw, &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, errUnknownKey
		}
		ks, err := v.keys.lookup(ctx, kid)
		if err != nil {
			keysErr = err
			return nil, err
		}
		// A key the JWKS pins to an algorithm serves that one only.
		var usable []jwt.VerificationKey
		for _, k := range ks {
			if k.alg == "" || k.alg == t.Method.Alg() {
				usable = append(usable, k.key)
			}
		}
		switch len(usable) {
		case 0:
			return nil, fmt.Errorf("no key %s is for %s", kid, t.Method.Alg())
		case 1:
			return usable[0], nil
		}
		return jwt.VerificationKeySet{Keys: usable}, nil
	})
	if keysErr != nil && errors.Is(keysErr, ErrKeysUnavailable) {
		return Caller{}, keysErr
	}
	if err != nil {
		return Caller{}, &TokenError{Reason: reason(err), err: err}
	}
	if c.Subject == "" {
		return Caller{}, &TokenError{Reason: "the token has no subject (sub)"}
	}
	if ReservedSubject(c.Subject) {
		return Caller{}, &TokenError{Reason: "the token's subject (sub) is reserved: " + ReservedSubjectPrefix + "... names the service's own callers"}
	}
	return Caller{Subject: c.Subject, Scopes: parseScopes(c.Scope), Accounts: c.Accounts}, nil
}

// reason says, in our words, why a token was refused.
func reason(err error) string {
	switch {
	case errors.Is(err, errUnknownKey):
		return "the token is not signed by a key of the issuer (unknown kid)"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return "the token's signature is not valid, or its algorithm is not one of RS256, ES256, EdDSA"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "the token has expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "the token is not valid yet (nbf)"
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "the token is issued in the future (iat)"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "the token is not from the expected issuer"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "the token is not for this audience"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "the token lacks a required claim (exp, iss, aud)"
	case errors.Is(err, jwt.ErrTokenMalformed), errors.Is(err, jwt.ErrInvalidType):
		return "the token is malformed"
	default:
		return "the token is not valid"
	}
}
