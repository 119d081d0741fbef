-- The refunds (devoluções) of received PIX, what the core keeps of them:
-- db/refunds.go and db/holds.go run these. The hand-over (RecordDebited,
-- after the PIX's credit is locked and what is left of it read: LockCredit,
-- TakenCents), the read another saga shares (GetRefund: the cautionary
-- block follows its devolução), the outcomes a PSP announced (NoteOutcomes:
-- the API Pix webhook and the PSP catch-up note them). The devolução's own
-- statements are its saga's: saga/refund/refunds.sql; the reconciliation's
-- check of them is saga/reconcile's (refunds.sql there). A statement that returns a refund
-- returns its columns in the order db.ScanRefund reads them.
-- $-parameters are named in the comment above each statement.

-- name: LockCredit
-- The PIX's credit, locked: the refunds and holds of one PIX are decided
-- one at a time (db.RecordRefund, db.Hold). Whose it is, its amount, and
-- when its refund window closes: the window counts from when the PIX was
-- first received (credited_at for credits recorded before received_at was
-- kept). Only when it closes, never whether it is open: this statement may
-- wait for the lock, and any clock read in it is read before that wait.
-- now() is the transaction's start, statement_timestamp() this
-- statement's, and even clock_timestamp() in the select list is evaluated
-- by the scan, under the lock's wait (PostgreSQL re-evaluates it after the
-- wait only when the holder updated the row; one that only locked it, as
-- another devolução of the PIX does, leaves the value read before). A
-- window that closed during the wait would be taken as open. The caller
-- compares it with the database's clock read in a statement after its
-- last lock (db.RecordRefund: db.Now after the credit, the account and
-- the hold). $1 end_to_end_id, $2 the refund window. FOR NO KEY UPDATE,
-- not FOR UPDATE: it serializes the same, but lets a transaction that
-- updates a hold of the PIX twice (raised, then filled: db.Release under
-- its account's lock) take the foreign key's FOR KEY SHARE of this row,
-- which the second update of a row it wrote checks again; FOR UPDATE made
-- it wait for a holder of this lock that waits for the account: a
-- deadlock.
SELECT account_id, amount_cents, COALESCE(received_at, credited_at) + $2::interval
FROM pix_credits WHERE end_to_end_id = $1
FOR NO KEY UPDATE

-- name: TakenCents
-- What of the PIX's credit is taken: its refunds (all but the reversed)
-- and its active holds (I11), but the hold $2 (the one a devolução
-- captures; NULL: none). A hold that fills from later credits takes what
-- it fills to, not only what it holds yet: the rest is reserved for its
-- fills (0035), which are made under the account's lock, not the
-- credit's. Read after LockCredit, in a statement of its own: its
-- snapshot then sees every refund and hold committed by whoever held the
-- lock before. A hold past its fill_until (a MED's: its report's
-- return_until) still takes what it fills to: harmless, as no devolução of
-- the PIX is made from then on (saga/med's ReturnWindow is the refund
-- window: return_until is never before it closes). $1 end_to_end_id.
SELECT ((SELECT COALESCE(sum(amount_cents), 0) FROM pix_refunds WHERE end_to_end_id = $1 AND status <> 'reversed')
      + (SELECT COALESCE(sum(COALESCE(fill_to_cents, amount_cents)), 0) FROM pix_holds
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
