package psptest

import (
	"io"
	"net/http"
)

// TokenFailure is one way the OAuth 2.0 token endpoint fails a call, as a
// FakePSP's TokenAnswer.
type TokenFailure struct {
	Name   string
	Answer func(n int, w http.ResponseWriter)
	// Refused: the endpoint refuses our client (the bank's side counts it,
	// retries and alerts); otherwise it is down (unknown: retried).
	Refused bool
}

// TokenFailures are the two ways the token endpoint fails a call: it
// refuses our client or it is down. Either way no call reaches the API,
// and no money may move: the activities' tests of each saga that calls
// the PSP go through them all.
var TokenFailures = []TokenFailure{
	{"refused (invalid_client)", func(_ int, w http.ResponseWriter) { oauthError(w, http.StatusUnauthorized, "invalid_client") }, true},
	{"refused (invalid_scope)", func(_ int, w http.ResponseWriter) { oauthError(w, http.StatusBadRequest, "invalid_scope") }, true},
	{"down (503)", func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) }, false},
	{"down (cut)", func(int, http.ResponseWriter) { panic(http.ErrAbortHandler) }, false},
}

// oauthError answers an OAuth 2.0 error response (RFC 6749, 5.2).
func oauthError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"error":"`+code+`"}`)
}
