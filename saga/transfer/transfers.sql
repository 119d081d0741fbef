-- The outgoing transfer's own statements: store.go runs them (the
-- hand-over, RecordDebited, is the core's: db/queries/transfers.sql). A
-- statement that returns a transfer returns its columns in the order
-- db.ScanTransfer reads them: id::text, end_to_end_id, account_id,
-- amount_cents, pix_key, description, status, balance_after_cents,
-- failure_reason, created_at, submitted_at, settled_at, refunded_at. Every
-- transfer event's payload has transfer_id, end_to_end_id, account_id,
-- amount_cents and pix_key.

-- name: GetTransfer
SELECT id::text, end_to_end_id, account_id, amount_cents, pix_key, description, status,
       balance_after_cents, failure_reason, created_at, submitted_at, settled_at, refunded_at
FROM pix_transfers WHERE id = $1

-- name: GetTransferByEndToEndID
SELECT id::text, end_to_end_id, account_id, amount_cents, pix_key, description, status,
       balance_after_cents, failure_reason, created_at, submitted_at, settled_at, refunded_at
FROM pix_transfers WHERE end_to_end_id = $1

-- name: LockTransfer
SELECT id::text, end_to_end_id, account_id, amount_cents, pix_key, description, status,
       balance_after_cents, failure_reason, created_at, submitted_at, settled_at, refunded_at
FROM pix_transfers WHERE id = $1
FOR UPDATE

-- name: MarkSubmitted
-- The PSP accepted the transfer. A transfer past debited is left as it is.
UPDATE pix_transfers SET status = 'submitted', submitted_at = clock_timestamp(), updated_at = clock_timestamp()
WHERE id = $1 AND status = 'debited'

-- name: Settle
-- The PSP settled the transfer: final, with its event. A transfer that is
-- final already is left as it is. $1 id, $2 the event's traceparent.
WITH settled AS (
    UPDATE pix_transfers
    SET status = 'settled', settled_at = clock_timestamp(), updated_at = clock_timestamp(), dispatch_due_at = NULL
    WHERE id = $1 AND status IN ('debited', 'submitted')
    RETURNING *)
INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
SELECT 'pix_transfer', id::text, 'pix.transfer.settled',
       jsonb_build_object('schema_version', 1, 'transfer_id', id, 'end_to_end_id', end_to_end_id,
                          'account_id', account_id, 'amount_cents', amount_cents, 'pix_key', pix_key,
                          'settled_at', settled_at), $2
FROM settled

-- name: Refund
-- The amount back to the account, the refund row (the once-only guard),
-- the transfer refunded and its event, in one statement. Run on a transfer
-- locked open. $1 id, $2 account_id, $3 amount_cents, $4 reason, $5 the
-- event's traceparent.
WITH credit AS (
    UPDATE accounts SET balance_cents = balance_cents + $3, updated_at = clock_timestamp()
    WHERE id = $2
    RETURNING balance_cents, updated_at),
refund AS (
    INSERT INTO pix_transfer_refunds (transfer_id, account_id, amount_cents, balance_after_cents, reason, refunded_at)
    SELECT $1, $2, $3, balance_cents, $4, updated_at FROM credit
    RETURNING refunded_at),
refunded AS (
    UPDATE pix_transfers
    SET status = 'refunded', failure_reason = $4, refunded_at = (SELECT refunded_at FROM refund),
        updated_at = (SELECT refunded_at FROM refund), dispatch_due_at = NULL
    WHERE id = $1
    RETURNING *),
event AS (
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
    SELECT 'pix_transfer', id::text, 'pix.transfer.refunded',
           jsonb_build_object('schema_version', 1, 'transfer_id', id, 'end_to_end_id', end_to_end_id,
                              'account_id', account_id, 'amount_cents', amount_cents, 'pix_key', pix_key,
                              'reason', failure_reason, 'balance_after_cents', credit.balance_cents,
                              'refunded_at', refunded_at), $5
    FROM refunded JOIN credit ON true)
SELECT refunded_at FROM refunded

-- name: OldestOpenAge
-- For the metrics: how long the oldest open transfer (debited or submitted,
-- neither settled nor refunded) has been open since its debit (0 when none
-- is open), in seconds.
SELECT COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(created_at)), 0)::float8
FROM pix_transfers WHERE dispatch_due_at IS NOT NULL
