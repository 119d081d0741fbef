// Package devpki makes the development certificates of a local run: a
// certificate authority and the certificates it issues, ECDSA P-256, PEM.
// make run's mutual TLS between the bank and the PSP simulator (both ways)
// is made with it under .data/pki (pixctl dev-pki), and the tests' own
// authorities (package testpki) are made by the same code. Never for
// production: a bank's certificates come from its PKI.
package devpki
