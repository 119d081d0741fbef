// Package e2e holds the end-to-end tests of the PIX credit service: the real
// HTTP API, dispatcher and worker (wired by cmd/pixd/app, as the binaries
// are) against the real PostgreSQL and a real Temporal dev server.
package e2e
