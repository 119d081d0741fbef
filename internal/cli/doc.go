// Package cli owns what every command's main does: a context that SIGINT or
// SIGTERM cancels (so that run can shut down gracefully), run, and the exit
// status.
package cli
