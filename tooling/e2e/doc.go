// Package e2e holds the end-to-end tests of the PIX credit service: the real
// HTTP API, dispatcher and worker (wired by cmd/pixd/app, as the binaries
// are) against the real PostgreSQL and a real Temporal dev server.
//
// They build only with the e2e tag (go test -tags e2e ./e2e in tooling/, the
// tooling's module; make test runs them): the unit tier, go test -short ./..., would skip every one of them,
// and linking their binary alone took a tenth of its time.
package e2e
