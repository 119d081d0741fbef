// Package registry owns the list of the service's sagas (All) and what is
// derived from it for every saga at once: their customer routes, their
// business error kinds, their outbox event types and their metrics. The
// worker, pixd and the replayer walk All; the -short tests here fail when a
// listed saga is missing a part of its wiring.
package registry
