// Package app owns the wiring of the service's processes: from a Config it
// builds the pool, the store, the Temporal client, the HTTP server, the
// dispatcher and the worker, each traced by the process's tracing provider
// when it is on, and runs them until their context ends. The binaries and
// the end-to-end tests use the same wiring. Run is the pixd command itself
// (its roles, migrations and set-up commands), which cmd/pixd's main calls.
package app
