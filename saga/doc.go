// Package saga declares each saga of the service once, as a Descriptor:
// its family (task queue), the workflows its worker registers under their
// recorded names, how its activities are built from the shared Env, and
// what starts its runs (a durable source, or a Temporal Schedule), its
// business error kinds, its event types, its settings, its HTTP side and
// its metrics. saga/registry's All is the one list a saga is registered
// in; the workers (package worker), the dispatchers and the Schedules
// (cmd/pixd/app) walk it, and a -short test fails when a saga in it lacks
// a source, a registration or a dependency.
// The first sagas are declared in a file of their own here (credit.go,
// maintenance.go); the others in a package of their own, saga/<name>
// (saga/transfer, saga/refund, saga/catchup, saga/scheduled), each listed
// by one line in saga/registry's All: a new saga is its package and its
// line.
//
// It sits above workflows, activities, db and api (it wires them: a
// saga's HTTP side is an api.SagaHTTP) and below worker and cmd/pixd/app
// (which run what it declares): it never imports those two. What the
// configuration and the workflows share of a saga's run (its Family, the
// task queues, the PSP calls' pace) is internal/runconf's, below both.
// The saga packages (this one and each saga/<name>) import api: the one
// upward direction that stays. docs/architecture.md's "Import directions"
// says why, and internal/sourcecheck's TestImportDirections holds the code
// to it (api never imports a saga package; saga/sagakit and saga/covered
// import no api at all).
//
// The error kinds and the event types are the exception to "walk All":
// their registries stay below this package, pix.Kinds in internal/pix and
// db.EventTypes in db, because the code that matches a kind or writes an
// event at run time (activities, workflows, db, api) is below it too, and
// this package imports that code. Each registry is built there from each
// saga's own list (pix.RefundKinds, db.RefundEvents, ...), defined once,
// plus pix.SharedKinds for the kinds no one saga owns (the accounts', the
// Idempotency-Key layer's, ErrUnavailable): a home of their own, not a
// saga. A descriptor names its saga's lists (Kinds, Events), and
// TestEveryKindAndEventIsASagas checks the two sides against each other
// under -short: a kind or event type in a registry no saga owns, one a saga
// declares that the registry lacks, one owned twice, or a saga with a
// durable source that declares no event type, fails it. Building the
// registries from All instead would make every reader of a kind import
// this package, and so everything it wires: a cycle.
package saga
