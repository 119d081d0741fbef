// Package scheduled owns the scheduled PIX (PIX Agendado): a PIX a customer
// asks for now and that is sent on a date. It is one saga in one package,
// listed by one line in saga/registry: its descriptor (Saga), its table's
// statements (queries.sql) and store, its durable queue, its workflow and
// activities, its customer routes, its metrics and its settings. Its tables
// come in db/migrations (0018; 0060: its cancels' wake-ups), its events'
// schemas in internal/broker/schemas, its API in
// api/openapi/pix-api/scheduled.yaml.
//
// Nothing is debited at creation. The row's saga (workflow
// pix-scheduled:<id>) sleeps on a durable timer until the date, then, in
// one transaction under the row's lock, debits the account and creates the
// outgoing transfer (db.RecordTransfer), which the transfer saga sends; or,
// the balance short, ends failed with nothing debited. A cancel changes the
// row under the same lock, then wakes the run with a signal: whichever
// takes the lock first decides, and the run ends as the row says.
//
// The cancel's wake-up is durable, as the start is, on a queue of its own
// (pix_scheduled_cancel_wakes, apart from pix_scheduled's: a build before
// it never sees a wake-up, and starts no run for a cancelled row): the
// cancel that concludes the row writes its entry in its transaction, and
// the saga's wake dispatcher (WakeSource, Saga.Wakes) signals the run,
// never starts one. A signal delivered, or no run open (never started, or
// closed), ends the entry (Store.EndCancelWake); a signal that fails
// (Temporal unreachable) leaves it due, tried again after the dispatcher's
// backoff. The route's own signal is the fast path, and a signal lost there
// (CancelNotWoken) no longer leaves the run asleep, "Running", until the
// PIX's date. pix_scheduled_cancel_wakes_late counts the wake-ups pending
// for more than WakeLateAfter.
package scheduled
