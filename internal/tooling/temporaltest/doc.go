// Package temporaltest runs a real Temporal dev server (the pinned Temporal
// CLI's `server start-dev`) for tests: on loopback, on free ports, with its
// state in a file so that it can be stopped and started again in a test.
// The CLI binary is TEMPORAL_CLI, else .bin/temporal at the repository root
// (scripts/lib.sh's build_tools builds it; `make test` runs that first).
package temporaltest
