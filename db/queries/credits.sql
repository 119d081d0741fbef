-- The credits of received PIX (the inbox), run by package db (inbox.go,
-- receive_group.go, failed.go). The retention of done inbox rows is in
-- saga/retention/maintenance.sql, the inbox's checks in the reconciliation
-- in saga/reconcile.

-- name: Receive
-- Stores one delivery of a notification, in one statement: a first
-- delivery inserts a pending row that is due for dispatch at once; a
-- redelivery of the same PIX only counts (deliveries+1) and records a refund
-- notice if it carries one, except that a failed row is put back to pending
-- in a new drive (re-driven). The same PIX here means the same format,
-- amount and recipient as sent (account, or key and txid). Otherwise
-- nothing is updated and no row is returned: db.creditedBefore then
-- judges the delivery against what is stored (listed.Stored, samePIX: the
-- same PIX told in the other format is a duplicate that changes nothing;
-- anything else a payload mismatch). Concurrent copies are one insert and
-- n-1 updates: PostgreSQL's ON CONFLICT decides atomically.
--
-- A PIX credited already (pix_credits, the guard that outlives the inbox
-- row) is never inserted as pending. Its candidate row exists only while
-- the statement's snapshot still shows the inbox row (the usual case: the
-- ON CONFLICT branch counts the delivery); if the retention deletes that
-- row while this statement runs, the insert goes through, and then as a
-- done row that agrees with the credit (the retention takes it again), so
-- the books never show a credited PIX pending. With no inbox row in the
-- snapshot no row is returned and db.creditedBefore compares the credit.
--
-- The re-drive of a failed row is RedriveFailed's SET list, written here as
-- CASEs on the row's status: an ON CONFLICT branch can't run another
-- statement, and plain SQL has no way to share a SET list without a
-- function in the schema. TestReceiveRedrivesAsRedriveFailedDoes keeps the
-- two alike.
--
-- first is deliveries = 1 on a pending row: a row brought back as done is
-- a redelivery. Re-driven is whether the row's drive grew: RETURNING's
-- subquery reads the statement's snapshot, the row as it was before this
-- delivery (absent for an insert), while drive is the row after it. (Not
-- the snapshot's status: a MarkFailed that commits while this statement
-- waits for the row's lock is re-driven here, from the row's latest
-- version, though the snapshot saw it pending.) A concurrent admin re-drive
-- makes it at worst a needless wake.
--
-- traceparent is the first delivery's (a redelivery, a re-drive keep it:
-- the PIX is one trace however often it comes and is retried).
-- A listing ($11 true: the PSP catch-up found the PIX in the PSP's own
-- record, pix.Notification.Listed) is no delivery: a row it finds is
-- neither re-driven nor counted (deliveries, last_delivered_at), since the
-- catch-up lists every PIX again at each run for its overlap; its refund
-- notice is recorded, and a first insert or a mismatch is as a delivery's.
-- Its first is whether it inserted the row (xmax = 0), pending.
-- $1 end_to_end_id, $2 amount_cents, $3 source, $4 account_id, $5 pix_key,
-- $6 txid, $7 psp, $8 refund_notice, $9 payload, $10 traceparent, $11 listed.
INSERT INTO inbox_messages (end_to_end_id, amount_cents, source, account_id, pix_key, txid, psp, refund_notice, payload,
                            traceparent, status, dispatch_due_at, processed_at)
SELECT $1, $2, $3, COALESCE(NULLIF($4, ''), c.account_id), NULLIF($5, ''), NULLIF($6, ''), NULLIF($7, ''), $8, $9, $10,
       CASE WHEN c.end_to_end_id IS NULL THEN 'pending' ELSE 'done' END,
       CASE WHEN c.end_to_end_id IS NULL THEN now() END,
       c.credited_at
FROM (SELECT 1) AS one LEFT JOIN pix_credits c ON c.end_to_end_id = $1
WHERE c.end_to_end_id IS NULL
   OR (EXISTS (SELECT 1 FROM inbox_messages m WHERE m.end_to_end_id = $1)
       AND c.amount_cents = $2 AND ($3 = 'api_pix' OR c.account_id = $4))
ON CONFLICT (end_to_end_id) DO UPDATE SET
    deliveries        = inbox_messages.deliveries + CASE WHEN $11::boolean THEN 0 ELSE 1 END,
    last_delivered_at = CASE WHEN $11::boolean THEN inbox_messages.last_delivered_at ELSE now() END,
    refund_notice     = COALESCE(EXCLUDED.refund_notice, inbox_messages.refund_notice),
    status            = CASE WHEN inbox_messages.status = 'failed' AND NOT $11::boolean THEN 'pending' ELSE inbox_messages.status END,
    drive             = CASE WHEN inbox_messages.status = 'failed' AND NOT $11::boolean THEN inbox_messages.drive + 1 ELSE inbox_messages.drive END,
    dispatch_due_at   = CASE WHEN inbox_messages.status = 'failed' AND NOT $11::boolean THEN now() ELSE inbox_messages.dispatch_due_at END,
    dispatched_at     = CASE WHEN inbox_messages.status = 'failed' AND NOT $11::boolean THEN NULL ELSE inbox_messages.dispatched_at END,
    processed_at      = CASE WHEN inbox_messages.status = 'failed' AND NOT $11::boolean THEN NULL ELSE inbox_messages.processed_at END
WHERE inbox_messages.amount_cents = EXCLUDED.amount_cents
  AND inbox_messages.source = EXCLUDED.source
  AND CASE WHEN EXCLUDED.source = 'native' THEN inbox_messages.account_id = EXCLUDED.account_id
           ELSE inbox_messages.pix_key IS NOT DISTINCT FROM EXCLUDED.pix_key
                AND inbox_messages.txid IS NOT DISTINCT FROM EXCLUDED.txid END
RETURNING status, CASE WHEN $11::boolean THEN xmax = 0 ELSE deliveries = 1 END AND status = 'pending',
    COALESCE(drive > (SELECT before.drive FROM inbox_messages before WHERE before.end_to_end_id = $1), false),
    attempts

-- name: SetLockTimeout
-- A group commit writer's connection waits at most $1 (such as '500ms')
-- for a row another transaction holds: past it, the call waiting is
-- written alone, by its own request. For the session: the writer holds the
-- connection while it runs.
SELECT set_config('lock_timeout', $1, false)

-- name: ResetLockTimeout
-- The writer's connection back to the pool as it came.
RESET lock_timeout

-- name: RedriveFailed
-- Puts failed PIX back to pending in a new drive, due for dispatch at once
-- (attempts and last_error are kept): the one $1 names (end_to_end_id),
-- the failed ones of account $2, or those of both (NULL: any). The rows are
-- locked first, in end_to_end_id byte order: a concurrent re-drive, or a
-- batch of redeliveries, takes the same rows in the same order. The PIX $1
-- names is locked whatever its status, so that the answer says what it is
-- now (the locked row, not the statement's snapshot); only a failed row is
-- re-driven. Returns each row locked: its end_to_end_id, its status when
-- locked (before the re-drive), its attempts, and whether it was re-driven.
WITH locked AS (
    SELECT end_to_end_id, status, attempts FROM inbox_messages
    WHERE (status = 'failed' OR $1::text IS NOT NULL)
      AND ($1::text IS NULL OR end_to_end_id = $1)
      AND ($2::text IS NULL OR account_id = $2)
    ORDER BY end_to_end_id COLLATE "C"
    FOR UPDATE),
redriven AS (
    UPDATE inbox_messages m
    SET status = 'pending', drive = m.drive + 1, dispatch_due_at = now(), dispatched_at = NULL, processed_at = NULL
    FROM locked WHERE m.end_to_end_id = locked.end_to_end_id AND m.status = 'failed'
    RETURNING m.end_to_end_id)
SELECT l.end_to_end_id, l.status, l.attempts, r.end_to_end_id IS NOT NULL
FROM locked l LEFT JOIN redriven r USING (end_to_end_id)
ORDER BY l.end_to_end_id COLLATE "C"

-- name: LockForCredit
-- The row, locked, and its account: named by the PSP (native format),
-- else resolved through the Pix key, else through the charge's txid
-- (API Pix format).
SELECT m.amount_cents, m.status, m.drive, m.pix_key, m.txid,
       COALESCE(m.account_id, CASE WHEN m.pix_key IS NOT NULL THEN k.account_id ELSE c.account_id END), m.psp
FROM inbox_messages m
LEFT JOIN pix_keys k ON k.key = m.pix_key
LEFT JOIN pix_charges c ON c.txid = m.txid
WHERE m.end_to_end_id = $1
FOR UPDATE OF m

-- name: CreditDone
-- What the credit of a done row recorded.
SELECT balance_after_cents, COALESCE(charge_outcome, '') FROM pix_credits WHERE end_to_end_id = $1

-- name: LockAccountForCredit
-- The account, locked, and any credit recorded in an earlier life of
-- this end_to_end_id (the guard that outlives the inbox row), in one
-- round trip. $1 account_id, $2 end_to_end_id.
SELECT a.status, a.balance_cents, c.account_id, c.amount_cents, c.balance_after_cents, c.charge_outcome
FROM accounts a LEFT JOIN pix_credits c ON c.end_to_end_id = $2
WHERE a.id = $1
FOR UPDATE OF a

-- name: MarkCreditedBefore
-- Marks done a row whose PIX was credited in an earlier life of its
-- end_to_end_id. $1 end_to_end_id, $2 attempt, $3 account_id.
UPDATE inbox_messages
SET status = 'done', account_id = $3, attempts = GREATEST(attempts, $2), processed_at = clock_timestamp(), dispatch_due_at = NULL
WHERE end_to_end_id = $1

-- name: Credit
-- The balance, the credit, its event, the inbox row and the charge
-- its PIX names (concluded only under the charge rule, see
-- ChargeConcluded) in one statement. The credit's time is
-- clock_timestamp(), not now(): the moment of the credit, after the
-- locks were obtained, not the transaction's start.
--
-- It also says whether the account has a hold still filling from its
-- credits (db.NewHold.FillFromCredits): then the credit fills it, with
-- the holds' Fill statement, in the same transaction. The probe is one
-- descent of pix_holds_filling_idx (0037), a partial index of the holds
-- filling now, almost always empty: the cost of filling holds to every
-- credit of an account without one, with no round trip of its own (the
-- Fill is a second statement only for an account that has one). The
-- statement starts after LockAccountForCredit took the account's lock,
-- under which every hold is made and ended: its snapshot sees every hold
-- of the account as it is, and a hold made after it is made after the
-- credit's commit. A hold past its fill_until (by this statement's start,
-- after the lock, as Fill decides) is not one filling: an account whose
-- only hold lacking is past it pays no Fill.
-- $1 end_to_end_id, $2 account_id, $3 balance after, $4 amount_cents,
-- $5 attempt, $6 txid, $7 the event's traceparent, $8 the PSP that
-- delivered the PIX (db.Store.deliveredBy; NULL: unknown).
WITH charge_before AS (
    SELECT account_id, amount_expected_cents, status FROM pix_charges WHERE txid = $6),
charge AS (
    UPDATE pix_charges SET status = 'CONCLUIDA', concluded_by = $1, updated_at = clock_timestamp()
    WHERE txid = $6 AND status = 'ATIVA' AND account_id = $2
      AND (amount_expected_cents IS NULL OR amount_expected_cents = $4)
    RETURNING txid),
outcome AS (
    SELECT CASE
        WHEN $6::text IS NULL THEN NULL
        WHEN EXISTS (SELECT 1 FROM charge) THEN 'concluded'
        WHEN NOT EXISTS (SELECT 1 FROM charge_before) THEN 'unknown_charge'
        WHEN (SELECT account_id FROM charge_before) <> $2 THEN 'other_account'
        WHEN (SELECT status FROM charge_before) <> 'ATIVA' THEN 'not_open'
        WHEN (SELECT amount_expected_cents FROM charge_before) <> $4 THEN 'amount_mismatch'
        -- Open, right account and amount, yet not updated: a
        -- concurrent PIX concluded it first.
        ELSE 'not_open' END AS value),
balance AS (
    UPDATE accounts SET balance_cents = $3, updated_at = clock_timestamp()
    WHERE id = $2
    RETURNING updated_at),
credit AS (
    INSERT INTO pix_credits (end_to_end_id, account_id, amount_cents, balance_after_cents, credited_at, charge_txid, charge_outcome, received_at, psp)
    SELECT $1, $2, $4, $3, updated_at, $6, (SELECT value FROM outcome),
           (SELECT received_at FROM inbox_messages WHERE end_to_end_id = $1), $8::text FROM balance
    RETURNING end_to_end_id, account_id, amount_cents, balance_after_cents, credited_at),
event AS (
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
    SELECT 'pix_credit', end_to_end_id, 'pix.credit.settled',
           jsonb_build_object('schema_version', 1, 'end_to_end_id', end_to_end_id, 'account_id', account_id,
                              'amount_cents', amount_cents, 'balance_after_cents', balance_after_cents,
                              'credited_at', credited_at), $7
    FROM credit)
UPDATE inbox_messages
SET status = 'done', account_id = $2, attempts = GREATEST(attempts, $5), dispatch_due_at = NULL,
    processed_at = (SELECT credited_at FROM credit)
WHERE end_to_end_id = $1
RETURNING (SELECT count(*) FROM credit), (SELECT value FROM outcome),
    EXISTS (SELECT 1 FROM pix_holds h WHERE h.account_id = $2 AND h.status = 'active' AND h.amount_cents < h.fill_to_cents
                                        AND (h.fill_until IS NULL OR statement_timestamp() < h.fill_until))

-- name: RecordAttemptFailure
-- The attempt count and the error, on a pending row of the caller's drive
-- only. $1 end_to_end_id, $2 attempt, $3 reason, $4 drive.
UPDATE inbox_messages SET attempts = GREATEST(attempts, $2), last_error = $3
WHERE end_to_end_id = $1 AND status = 'pending' AND drive = $4

-- name: LockForFail
SELECT status, drive, attempts FROM inbox_messages WHERE end_to_end_id = $1 FOR UPDATE

-- name: IsCredited
-- The retention removes done rows only: a PIX with no inbox row was
-- credited if it has a credit.
SELECT EXISTS (SELECT 1 FROM pix_credits WHERE end_to_end_id = $1)

-- name: MarkFailed
-- The row failed, with its last error and its event, in one statement.
-- $1 end_to_end_id, $2 attempts, $3 reason, $4 the event's traceparent.
WITH failed AS (
    UPDATE inbox_messages
    SET status = 'failed', attempts = GREATEST(attempts, $2), last_error = $3,
        processed_at = clock_timestamp(), dispatch_due_at = NULL
    WHERE end_to_end_id = $1
    RETURNING end_to_end_id, account_id, pix_key, txid, amount_cents, attempts, last_error, processed_at),
event AS (
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
    SELECT 'pix_credit', end_to_end_id, 'pix.credit.failed',
           jsonb_build_object('schema_version', 1, 'end_to_end_id', end_to_end_id, 'account_id', account_id,
                              'pix_key', pix_key, 'txid', txid, 'amount_cents', amount_cents, 'attempts', attempts,
                              'reason', last_error, 'failed_at', processed_at), $4
    FROM failed)
SELECT attempts FROM failed

-- name: GetCredit
-- One incoming PIX: its inbox row, or, once that was cleaned up, its
-- credit (then source is NULL: the credit no longer says).
SELECT m.end_to_end_id, m.source, m.account_id, m.pix_key, m.txid, m.amount_cents, m.status, m.attempts, m.last_error,
       m.deliveries, m.received_at, m.processed_at, c.credited_at, c.charge_txid, c.charge_outcome
FROM inbox_messages m LEFT JOIN pix_credits c USING (end_to_end_id)
WHERE m.end_to_end_id = $1
UNION ALL
SELECT c.end_to_end_id, NULL, c.account_id, NULL, c.charge_txid, c.amount_cents, 'done', 0, NULL, 0, c.credited_at, c.credited_at, c.credited_at,
       c.charge_txid, c.charge_outcome
FROM pix_credits c
WHERE c.end_to_end_id = $1 AND NOT EXISTS (SELECT 1 FROM inbox_messages WHERE end_to_end_id = $1)

-- name: FailedCredits
-- A page of the failed PIX, newest first: by the time they failed
-- (processed_at, which MarkFailed sets, the one writer of 'failed'), then
-- end_to_end_id, a total order. $1, $2 the sort key of the last row of the
-- page before (NULL, NULL: from the first; the sentinel is above every
-- key), $3 at most. The row comparison is the index's condition
-- (inbox_messages_failed_order_idx, 0019): a page reads its own rows.
SELECT end_to_end_id, source, account_id, pix_key, txid, amount_cents, status, attempts, last_error,
       deliveries, received_at, processed_at, NULL::timestamptz
FROM inbox_messages
WHERE status = 'failed'
  AND (processed_at, end_to_end_id) < (COALESCE($1::timestamptz, 'infinity'), COALESCE($2::text, ''))
ORDER BY processed_at DESC, end_to_end_id DESC LIMIT $3

-- name: FailedCreditsOfAccount
-- FailedCredits of account $1 only ($2, $3 the key after, $4 at most): a
-- statement of its own, so that its plan, generic or not, is the account's
-- index (inbox_messages_failed_idx, 0001), never the scan of every
-- account's failed rows.
SELECT end_to_end_id, source, account_id, pix_key, txid, amount_cents, status, attempts, last_error,
       deliveries, received_at, processed_at, NULL::timestamptz
FROM inbox_messages
WHERE status = 'failed' AND account_id = $1
  AND (processed_at, end_to_end_id) < (COALESCE($2::timestamptz, 'infinity'), COALESCE($3::text, ''))
ORDER BY processed_at DESC, end_to_end_id DESC LIMIT $4

-- name: OldestPendingAge
-- Seconds since the PSP first told us of the oldest pending row; 0 when
-- none is pending.
SELECT COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(received_at)), 0)::float8
FROM inbox_messages WHERE status = 'pending'
