-- The refunds (devoluções) of received PIX: db/refunds.go runs these.
-- $-parameters are named in the comment above each statement.

-- name: CreditAccount
-- Whose the PIX is, read without a lock: a caller probing another
-- customer's PIX never waits on, nor holds up, its owner's refunds.
SELECT account_id FROM pix_credits WHERE end_to_end_id = $1

-- name: LockCredit
-- The PIX's credit, locked: the refunds and holds of one PIX are decided
-- one at a time (db.RecordRefund, db.Hold). Whose it is, its amount, and
-- whether it can still be returned: the window counts from when the PIX
-- was first received (credited_at for credits recorded before received_at
-- was kept). $1 end_to_end_id, $2 the refund window.
SELECT account_id, amount_cents, COALESCE(received_at, credited_at) + $2::interval > now()
FROM pix_credits WHERE end_to_end_id = $1
FOR UPDATE

-- name: TakenCents
-- What of the PIX's credit is taken: its refunds (all but the reversed)
-- and its active holds (I11), but the hold $2 (the one a devolução
-- captures; NULL: none). Read after LockCredit, in a statement of its
-- own: its snapshot then sees every refund and hold committed by whoever
-- held the lock before. $1 end_to_end_id.
SELECT ((SELECT COALESCE(sum(amount_cents), 0) FROM pix_refunds WHERE end_to_end_id = $1 AND status <> 'reversed')
      + (SELECT COALESCE(sum(amount_cents), 0) FROM pix_holds
         WHERE end_to_end_id = $1 AND status = 'active' AND id IS DISTINCT FROM $2::uuid))::bigint

-- name: RecordDebited
-- The refund row and its event, in one statement, after its debit
-- (DebitAccount) in the same transaction.
-- $1 id, $2 end_to_end_id, $3 account_id, $4 amount_cents, $5 reason,
-- $6 idempotency_key, $7 requested_by, $8 traceparent (of the refund's
-- saga and of its event), $9 the balance after the debit, $10 the time of
-- the debit.
WITH refund AS (
    INSERT INTO pix_refunds (id, end_to_end_id, account_id, amount_cents, reason, balance_after_cents,
                             idempotency_key, requested_by, created_at, updated_at, dispatch_due_at, traceparent)
    VALUES ($1, $2, $3, $4, NULLIF($5, ''), $9, $6, NULLIF($7, ''), $10, $10, now(), $8)
    RETURNING *),
event AS (
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
    SELECT 'pix_refund', id, 'pix.refund.debited',
           jsonb_build_object('schema_version', 1, 'refund_id', id, 'end_to_end_id', end_to_end_id,
                              'account_id', account_id, 'amount_cents', amount_cents, 'reason', reason,
                              'balance_after_cents', balance_after_cents, 'debited_at', created_at), $8
    FROM refund)
SELECT id, end_to_end_id, rtr_id, account_id, amount_cents, reason, status, balance_after_cents,
       failure_reason, created_at, requested_at, returned_at, reversed_at
FROM refund

-- name: GetRefund
SELECT id, end_to_end_id, rtr_id, account_id, amount_cents, reason, status, balance_after_cents,
       failure_reason, created_at, requested_at, returned_at, reversed_at
FROM pix_refunds WHERE id = $1

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

-- name: NoteOutcomes
-- The outcomes a PSP's webhook (or its record, listed by the catch-up)
-- announced, on the refunds they name (id and PIX must both match). An
-- open refund is due at once and counts the notice, so that the
-- dispatcher signals its run; a final one only keeps the notice, for the
-- reconciliation to compare with its status. A refund that holds that
-- notice already is not written again (the catch-up lists the same PIX at
-- every run, a PSP redelivers its webhook: a notice that changes nothing
-- writes nothing, not even a row lock; an open refund's run was, or is
-- about to be, signalled that very notice). Locked in id order (byte order): two webhooks naming the same
-- refunds never wait for each other in a cycle. $1 ids, $2
-- end_to_end_ids, $3 statuses (DEVOLVIDO, NAO_REALIZADO). Returns each
-- refund noted and its status.
WITH notice AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) AS n(id, end_to_end_id, status)),
locked AS (
    SELECT r.id, n.status FROM pix_refunds r
    JOIN notice n ON n.id = r.id AND n.end_to_end_id = r.end_to_end_id
    WHERE r.psp_notice IS DISTINCT FROM n.status
    ORDER BY r.id COLLATE "C"
    FOR UPDATE OF r)
UPDATE pix_refunds r
SET psp_notice = locked.status, noticed_at = now(),
    notices = r.notices + CASE WHEN r.status IN ('debited', 'requested') THEN 1 ELSE 0 END,
    dispatch_due_at = CASE WHEN r.status IN ('debited', 'requested') THEN now() END
FROM locked
WHERE r.id = locked.id
RETURNING r.id, r.end_to_end_id, r.status

-- name: Contradictions
-- For the reconciliation: final refunds whose latest PSP notice says
-- otherwise than their status.
SELECT id FROM pix_refunds
WHERE (status = 'returned' AND psp_notice = 'NAO_REALIZADO') OR (status = 'reversed' AND psp_notice = 'DEVOLVIDO')
ORDER BY id

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
