-- +goose Up
-- The durable wake-up of a cancelled scheduled PIX's run (saga/scheduled):
-- the cancel (DELETE /pix/scheduled/{id}) signals the run at once, asleep
-- until the PIX's date; a signal lost (Temporal unreachable, or the
-- service's client still reconnecting) left it asleep, "Running" for a
-- cancelled PIX, until that date. The cancel now also writes an entry
-- here, in its own transaction (only when it concludes the row), and the
-- saga's second dispatcher (kind scheduled_cancel_wake) signals the run
-- until the signal is delivered or no run is open, then deletes the entry;
-- a failed signal leaves it due, after the dispatcher's backoff.
--
-- A queue of its own, not pix_scheduled's: a build before this one
-- dispatches pix_scheduled (starting a run for any row due there, whatever
-- its status) and knows nothing of this table, so a rollback or a rolling
-- upgrade leaves the entries here waiting, never restarting runs. 0018's
-- check (a pix_scheduled row due only while scheduled) stands.
--
-- dispatch_due_at and dispatched_at are the durable queue's columns
-- (db.QueueSpec): when the entry is due (the lease of a claim), and when
-- its signal was first delivered (an entry is deleted then: NULL but for
-- an instant). created_at is the cancel's: the gauge
-- pix_scheduled_cancel_wakes_late counts the entries older than a few
-- minutes (PixScheduledCancelWakeLate). The new table is empty; the
-- reference takes a brief lock on pix_scheduled, hence the lock timeout.
SET LOCAL lock_timeout = '5s';
CREATE TABLE pix_scheduled_cancel_wakes (
    scheduled_id    uuid        PRIMARY KEY REFERENCES pix_scheduled (id),
    created_at      timestamptz NOT NULL DEFAULT now(),
    dispatch_due_at timestamptz NOT NULL DEFAULT now(),
    dispatched_at   timestamptz
);

CREATE INDEX pix_scheduled_cancel_wakes_due_idx ON pix_scheduled_cancel_wakes (dispatch_due_at);
