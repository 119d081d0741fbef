// Package auth owns who a caller of the customer and admin API is: it
// verifies OAuth 2.0 bearer tokens (JWTs signed by the bank's issuer, keys
// from a JWKS file or URL), turns their claims into a Caller (subject,
// scopes, accounts), and mints tokens for the development issuer that
// `make run` sets up. What a caller may do with a route is decided by the
// api package, from the Caller.
package auth
