// Package cli owns what every command's main does: a context that SIGINT or
// SIGTERM cancels (so that run can shut down gracefully), run, and the exit
// status: the error's, which WithStatus sets (usage, a problem found, no
// answer; documented by pixctl), 1 for any other error.
package cli
