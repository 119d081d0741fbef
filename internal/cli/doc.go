// Package cli owns what every command's main does: a context that SIGINT or
// SIGTERM cancels (so that run can shut down gracefully), run, and the exit
// status: the error's, which WithStatus sets, 1 for any other error. The
// statuses are one table for pixd and pixctl (Statuses, docs/cli.md), so
// that a number means the same whichever binary a script runs.
package cli
