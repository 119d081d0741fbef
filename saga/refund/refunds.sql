-- The devolução's own statements: store.go runs them (the hand-over,
-- RecordDebited, the read of a refund, GetRefund, and the outcomes a PSP
-- announced, NoteOutcomes, are the core's: db/queries/refunds.sql). A
-- statement that returns a refund returns its columns in the order
-- db.ScanRefund reads them: id, end_to_end_id, rtr_id, account_id,
-- amount_cents, reason, status, balance_after_cents, failure_reason,
-- created_at, requested_at, returned_at, reversed_at.
-- $-parameters are named in the comment above each statement.

-- name: CreditAccount
-- Whose the PIX is, read without a lock: a caller probing another
-- customer's PIX never waits on, nor holds up, its owner's refunds.
SELECT account_id FROM pix_credits WHERE end_to_end_id = $1

-- name: LockRefund
SELECT id, end_to_end_id, rtr_id, account_id, amount_cents, reason, status, balance_after_cents,
       failure_reason, created_at, requested_at, returned_at, reversed_at
FROM pix_refunds WHERE id = $1
FOR UPDATE

-- name: RefundsOf
-- The refunds of one PIX, oldest first.
SELECT id, end_to_end_id, rtr_id, account_id, amount_cents, reason, status, balance_after_cents,
       failure_reason, created_at, requested_at, returned_at, reversed_at
FROM pix_refunds WHERE end_to_end_id = $1
ORDER BY created_at, id

-- name: MarkRequested
-- The PSP holds the devolução. An open refund only; the first rtr_id the
-- PSP gave is kept. $1 id, $2 rtr_id.
UPDATE pix_refunds
SET status = 'requested', rtr_id = COALESCE(rtr_id, NULLIF($2, '')),
    requested_at = COALESCE(requested_at, clock_timestamp()), updated_at = clock_timestamp()
WHERE id = $1 AND status IN ('debited', 'requested')

-- name: MarkReturned
-- The PSP returned the money: final, with its event. An open refund only.
-- $1 id, $2 rtr_id, $3 the event's traceparent.
WITH returned AS (
    UPDATE pix_refunds
    SET status = 'returned', rtr_id = COALESCE(rtr_id, NULLIF($2, '')), returned_at = clock_timestamp(),
        updated_at = clock_timestamp(), dispatch_due_at = NULL
    WHERE id = $1 AND status IN ('debited', 'requested')
    RETURNING *)
INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
SELECT 'pix_refund', id, 'pix.refund.returned',
       jsonb_build_object('schema_version', 1, 'refund_id', id, 'end_to_end_id', end_to_end_id,
                          'account_id', account_id, 'amount_cents', amount_cents, 'rtr_id', rtr_id,
                          'returned_at', returned_at), $3
FROM returned

-- name: Reverse
-- The PSP did not return the money: the amount goes back to the account,
-- the reversal row (the once-only guard) and the refund's final status
-- with its event, in one statement. Run on a refund locked open.
-- $1 id, $2 account_id, $3 amount_cents, $4 reason, $5 the event's
-- traceparent.
WITH credit AS (
    UPDATE accounts SET balance_cents = balance_cents + $3, updated_at = clock_timestamp()
    WHERE id = $2
    RETURNING balance_cents, updated_at),
reversal AS (
    INSERT INTO pix_refund_reversals (refund_id, account_id, amount_cents, balance_after_cents, reason, reversed_at)
    SELECT $1, $2, $3, balance_cents, $4, updated_at FROM credit
    RETURNING reversed_at, balance_after_cents),
reversed AS (
    UPDATE pix_refunds
    SET status = 'reversed', failure_reason = $4, reversed_at = (SELECT reversed_at FROM reversal),
        updated_at = (SELECT reversed_at FROM reversal), dispatch_due_at = NULL
    WHERE id = $1
    RETURNING *),
event AS (
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
    SELECT 'pix_refund', r.id, 'pix.refund.reversed',
           jsonb_build_object('schema_version', 1, 'refund_id', r.id, 'end_to_end_id', r.end_to_end_id,
                              'account_id', r.account_id, 'amount_cents', r.amount_cents, 'reason', r.failure_reason,
                              'balance_after_cents', v.balance_after_cents, 'reversed_at', r.reversed_at), $5
    FROM reversed r CROSS JOIN reversal v)
SELECT reversed_at FROM reversal

-- name: OldestOpenAge
-- For the metrics: how long the oldest open refund has waited for its
-- outcome since its debit (0 when none is open), in seconds.
SELECT COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(created_at)), 0)::float8
FROM pix_refunds WHERE dispatch_due_at IS NOT NULL

-- name: MarkAsked
-- The saga is about to send the devolução to the PSP: every ask is counted
-- (psp_asks), the first time is recorded, and whether this is the first is
-- returned (read under the row's lock, before the update). $1 id.
UPDATE pix_refunds r SET psp_asked_at = COALESCE(r.psp_asked_at, clock_timestamp()), psp_asks = r.psp_asks + 1
FROM (SELECT id, psp_asked_at IS NULL AS first FROM pix_refunds WHERE id = $1 FOR UPDATE) asked
WHERE r.id = asked.id
RETURNING asked.first

-- name: RefusalStands
-- On a refund locked by LockRefund: nothing says the PSP ever took it (no
-- answer of the PSP recorded, no notice of it), and it was sent once at
-- most (psp_asks): no other PUT than the refused one may have made it.
SELECT status = 'debited' AND rtr_id IS NULL AND psp_notice IS NULL AND notices = 0 AND psp_asks <= 1
FROM pix_refunds WHERE id = $1

-- name: MarkRefused
-- The PSP refused the devolução and holds no record of it: recorded (the
-- first refusal and its reason kept) only while nothing says the PSP took
-- it and no PUT but the refused one was sent, as RefusalStands reads it: a
-- refusal recorded late, after another attempt's ask, is not. $1 id, $2
-- the PSP's refusal.
UPDATE pix_refunds SET psp_refused_at = COALESCE(psp_refused_at, clock_timestamp()), psp_refusal = COALESCE(psp_refusal, $2)
WHERE id = $1 AND status = 'debited' AND rtr_id IS NULL AND psp_notice IS NULL AND notices = 0 AND psp_asks <= 1

-- name: StandingRefusal
-- The PSP's recorded refusal of the devolução, and whether it still stands
-- (as RefusalStands: an ask after it ends it too): only then does a run go
-- straight to its second look.
SELECT COALESCE(psp_refusal, ''),
       psp_refused_at IS NOT NULL AND status = 'debited' AND rtr_id IS NULL AND psp_notice IS NULL AND notices = 0 AND psp_asks <= 1
FROM pix_refunds WHERE id = $1
