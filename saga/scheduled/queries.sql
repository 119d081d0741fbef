-- The scheduled PIX's statements, bound by its store (db.BindQueries). A
-- statement that returns a scheduled PIX returns its row (*), which the
-- store reads by column name into its typed row (row in store.go). Every event of the
-- saga has one payload: scheduled_id, account_id, amount_cents, pix_key,
-- scheduled_for, status, failure_reason, transfer_id, end_to_end_id, at.

-- name: AccountStatus
-- The account a scheduled PIX would debit, locked for the creation, so
-- that two creations for one account count its pending ones one after the
-- other: refused at creation when it is missing or closed. Its balance is
-- looked at on the date only.
SELECT status FROM accounts WHERE id = $1 FOR UPDATE

-- name: CountPending
-- The account's scheduled PIX still to run, read in a statement of its own
-- after the account's lock (a statement that waited for the lock would
-- count from the snapshot it began with, before the holder's commit).
SELECT count(*) FROM pix_scheduled WHERE account_id = $1 AND status = 'scheduled'

-- name: Create
-- The row and its created event. $1 id, $2 account_id, $3 amount_cents,
-- $4 pix_key, $5 description, $6 scheduled_for (YYYY-MM-DD), $7 run_at,
-- $8 idempotency_key, $9 requested_by, $10 traceparent. Due at once for
-- its dispatcher: the run starts now and sleeps until run_at.
WITH scheduled AS (
    INSERT INTO pix_scheduled (id, account_id, amount_cents, pix_key, description, scheduled_for, run_at,
                               idempotency_key, requested_by, traceparent, dispatch_due_at)
    VALUES ($1, $2, $3, $4, NULLIF($5, ''), $6::date, $7, $8, NULLIF($9, ''), $10, now())
    RETURNING *),
event AS (
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
    SELECT 'pix_scheduled', id::text, 'pix.scheduled.created',
           pix_scheduled_event(scheduled::pix_scheduled, created_at), traceparent
    FROM scheduled)
SELECT * FROM scheduled

-- name: Get
SELECT * FROM pix_scheduled WHERE id = $1

-- name: Lock
-- The row, locked for the decision that concludes it (run or cancel):
-- whichever takes the lock first decides, the other sees its decision.
SELECT * FROM pix_scheduled WHERE id = $1 FOR UPDATE

-- name: ListByAccount
-- A page of an account's scheduled PIX, by date, then id (a total order):
-- $1 account_id, $2, $3 the sort key of the last row of the page before
-- (NULL, NULL: from the first; the sentinel is below every key), $4 at
-- most. The row comparison is the index's condition
-- (pix_scheduled_account_idx): a page reads its own rows.
SELECT * FROM pix_scheduled
WHERE account_id = $1
  AND (scheduled_for, id) > (COALESCE($2::date, '-infinity'), COALESCE($3::uuid, '00000000-0000-0000-0000-000000000000'))
ORDER BY scheduled_for, id LIMIT $4

-- name: ListByAccountStatus
-- ListByAccount of the status $2 only ($3, $4 the key after, $5 at most),
-- from the index that holds the status (pix_scheduled_account_status_idx):
-- a page of the PIX still to run never reads past those that ran.
SELECT * FROM pix_scheduled
WHERE account_id = $1 AND status = $2
  AND (scheduled_for, id) > (COALESCE($3::date, '-infinity'), COALESCE($4::uuid, '00000000-0000-0000-0000-000000000000'))
ORDER BY scheduled_for, id LIMIT $5

-- name: Conclude
-- Concludes a row still scheduled, with its event, and closes its queue
-- entry: $1 id, $2 status (executed, failed, cancelled), $3
-- failure_reason, $4 transfer_id, $5 end_to_end_id. A row concluded
-- already is left as it is (no row returned).
WITH scheduled AS (
    UPDATE pix_scheduled SET status = $2, failure_reason = $3, transfer_id = $4, end_to_end_id = $5,
        concluded_at = now(), updated_at = now(), dispatch_due_at = NULL
    WHERE id = $1 AND status = 'scheduled'
    RETURNING *),
event AS (
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
    SELECT 'pix_scheduled', id::text, 'pix.scheduled.concluded',
           pix_scheduled_event(scheduled::pix_scheduled, concluded_at), traceparent
    FROM scheduled)
SELECT * FROM scheduled

-- name: AddCancelWake
-- The durable wake-up of the run of scheduled PIX $1, which this
-- transaction cancelled (Cancel, only when it concluded the row): due at
-- once for the saga's wake dispatcher (WakeSource). A row cancels once, so
-- its entry is written once.
INSERT INTO pix_scheduled_cancel_wakes (scheduled_id) VALUES ($1)

-- name: EndCancelWake
-- Ends the wake-up of the cancelled scheduled PIX $1: its run was woken,
-- or has none open (never started, or closed). A row's entry is never
-- written again after its cancel, so a late or second dispatcher's end
-- deletes nothing.
DELETE FROM pix_scheduled_cancel_wakes WHERE scheduled_id = $1

-- name: Pending
-- The gauges: the scheduled PIX still to run, those past their time by
-- more than $1 (a run lost or stuck: PixScheduledOverdue), and the
-- cancels whose run was not woken for more than $2
-- (PixScheduledCancelWakeLate).
SELECT count(*), count(*) FILTER (WHERE run_at < now() - $1::interval),
    (SELECT count(*) FROM pix_scheduled_cancel_wakes WHERE created_at < now() - $2::interval)
FROM pix_scheduled WHERE status = 'scheduled'
