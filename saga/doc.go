// Package saga declares each saga of the service once, as a Descriptor:
// its family (task queue), the workflows its worker registers under their
// recorded names, how its activities are built from the shared Env, and
// what starts its runs (a durable source, or a Temporal Schedule). All is
// the one list a saga is registered in; the workers (package worker), the
// dispatchers and the Schedules (cmd/pixd/app) walk it, and a -short test
// fails when a saga in it lacks a source, a registration or a dependency.
// Each saga is declared in a file of its own (credit.go, transfer.go,
// refund.go, maintenance.go, catchup.go): a new saga is its file and its
// line in All.
//
// It sits above workflows, activities and db (it wires them) and below
// worker and cmd/pixd/app (which run what it declares): it never imports
// those two, nor api.
package saga
