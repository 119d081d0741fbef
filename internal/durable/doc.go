// Package durable owns durable starts: how a saga's workflow is started
// after the commit that created (or re-drove) its row, and started again
// whenever it must be, whatever fails in between. Every saga uses it by
// supplying a Source: its Queue (its table's due rows, in the database) and
// how its workflow starts.
//
// The protocol, the same for every saga:
//   - due rows: a saga's row is open while its workflow has work to do, and
//     carries when the dispatcher must next (re)start it (dispatch_due_at)
//     and whether a run of its current drive was started (dispatched_at);
//     the row and its due time are written in the transaction of the
//     business change, so that nothing accepted is lost between the commit
//     and the start;
//   - claim with lease: a Dispatcher claims a batch of due rows (FOR UPDATE
//     SKIP LOCKED), pushing their due time a lease ahead, so that several
//     dispatchers share the work and a dispatcher that dies only delays it;
//   - wake-up: the store notifies the Queue's channel after the commit
//     (db.Store's waker, the one wake mechanism) and the Dispatcher LISTENs
//     on it, and polls, since a notification can be lost;
//   - idempotent start: StartOnce starts the workflow under the saga's
//     business key unless a run is open there;
//   - recheck: a started row comes due again after RecheckAfter while it is
//     open, then, while its run is open, after as long as the run has been
//     open (up to RecheckMax), and its start is issued again (a no-op while the
//     run is open; a run lost, failed or terminated is started anew). Every record of a
//     claim is fenced by the drive the row was claimed in, so a late
//     dispatcher changes nothing after a re-drive;
//   - trace context: a row carries the traceparent of the request that
//     created it (Due.Traceparent), and its workflow is started under it,
//     so that the asynchronous hop continues the request's trace.
package durable
