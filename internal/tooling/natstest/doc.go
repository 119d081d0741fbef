// Package natstest runs a real NATS server with JetStream (the pinned
// nats-server binary, tools/nats) for tests: on loopback, on a port of its
// own, its streams in a folder, so that a test can stop it and start it
// again with its streams, as a broker restart does. The binary is
// NATS_SERVER, else .bin/nats-server at the repository root (scripts/lib.sh's
// build_tools builds it; `make test` runs that first). It is a process of
// its own, not a server embedded in the test, so that the service's module
// never links the NATS server: pixd is only ever a client of one.
package natstest
