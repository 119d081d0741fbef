// Package app owns the wiring of the service's processes: from a Config it
// builds the pool, the store, the Temporal client, the HTTP server, the
// dispatcher and the worker, each traced by the process's tracing provider
// when it is on, and runs them until their context ends. The binaries and
// the end-to-end tests use the same wiring. Run is the pixd command itself
// (its roles, migrations and set-up commands), which cmd/pixd's main calls.
//
// Its files, by concern: app.go, the wiring (configuration to pool, store,
// PSP and Temporal clients, tracing, metrics, the sagas' Env and HTTP
// sides) and what every role shares; listeners.go, the API's listeners
// (route classes per listener, TLS and mutual TLS, the connection and
// in-flight caps, the graceful drain); worker.go, the worker (Temporal
// workers, dispatchers, Schedules, the outbox relay, waiting for
// Temporal); command.go, the pixd command.
package app
