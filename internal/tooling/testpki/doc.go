// Package testpki makes certificate authorities and the certificates they
// issue, for tests of TLS and mutual TLS (the API's listeners, the Temporal
// client): each test its own, valid for an hour, on P-256 keys.
package testpki
