// Package db owns everything PostgreSQL: the connection pool, the embedded
// numbered migrations, and the Store whose methods are the only place SQL is
// written. Every method is one transaction boundary; callers never see a
// transaction. Errors are returned wrapped with %w: business refusals as the
// typed errors of package pix, connectivity failures wrapped in
// pix.ErrUnavailable so callers can answer "retry later" (503) and never 202.
package db
