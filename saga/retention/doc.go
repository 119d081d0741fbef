// Package retention owns the retention: its Temporal Schedule
// (pix-retention:<task queue>, every RETENTION_INTERVAL) runs PixRetention,
// which deletes in small batches what the service no longer needs to keep:
// expired idempotency keys, outbox events published longer ago than
// OUTBOX_RETENTION, and inbox rows done longer ago than INBOX_RETENTION
// (their credits stay, the guard against a second credit). It is one saga
// in one package, listed by one line in saga/registry: its descriptor
// (Saga), its statements (maintenance.sql) and store, its workflow and
// activities, its Schedule and its settings (RETENTION_*,
// INBOX_RETENTION). The tables are the core's (db/migrations).
//
// A run is bounded (Input): up to MaxBatches batches of BatchSize rows a
// table, at RETENTION_ROWS_PER_SECOND, stopping a minute before its
// activity's deadline and when its worker stops; the next run takes the
// rest. A worker whose settings cannot keep up with the design rate says
// so at its start (WarnIfFallsBehind).
package retention
