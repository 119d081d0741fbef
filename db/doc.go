// Package db owns everything PostgreSQL: the connection pool, the embedded
// numbered migrations and their runner (goose, with the checksums and the
// takeover of the earlier runner's databases: migrate.go), and the Store
// whose methods are the only place SQL runs. The SQL is written in queries/, one file per saga or mechanism, each
// statement in full under its name (bindQueries), never spliced together
// from Go strings; but for the durable queues' three statements, written
// once (queries/due.sql.tmpl) and filled in from each saga's declaration
// of its queue (QueueSpec, checked when the package is initialised). Every method is one transaction boundary; callers never see a
// transaction. Errors are returned wrapped with %w: business refusals as the
// typed errors of package pix, connectivity failures wrapped in
// pix.ErrUnavailable so callers can answer "retry later" (503) and never 202.
package db
