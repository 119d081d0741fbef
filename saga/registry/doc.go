// Package registry owns the list of the service's sagas (All) and what is
// derived from it for every saga at once: their customer routes, their
// business error kinds, their outbox event types and their metrics. The
// worker, pixd and the replayer walk All; the -short tests here fail when a
// listed saga is missing a part of its wiring, or its rows in the docs'
// tables that list the sagas (docs_test.go): docs/operations.md's table of
// the sagas, which go generate writes from All, its versioning and metrics
// tables, docs/events.md's events, docs/extending.md's worked example.
package registry

//go:generate env PIX_UPDATE_DOCS=1 go test -count=1 -run ^TestTheSagasTableIsGenerated$ .
