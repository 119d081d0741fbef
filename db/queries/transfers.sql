-- The hand-over of a transfer to its saga (saga/transfer, whose own
-- statements are its transfers.sql): db/transfers.go runs it. A statement
-- that returns a transfer returns its columns in the order ScanTransfer
-- reads them:
-- id::text, end_to_end_id, account_id, amount_cents, pix_key, description,
-- status, balance_after_cents, failure_reason, created_at, submitted_at,
-- settled_at, refunded_at. Every transfer event's payload has transfer_id,
-- end_to_end_id, account_id, amount_cents and pix_key.

-- name: RecordDebited
-- The transfer row and its event, in one statement, after its debit
-- (DebitAccount) in the same transaction.
-- $1 id, $2 end_to_end_id, $3 account_id, $4 amount_cents, $5 pix_key,
-- $6 description, $7 idempotency_key, $8 requested_by, $9 traceparent (of
-- the transfer's saga and of its event), $10 the balance after the debit,
-- $11 the time of the debit.
WITH transfer AS (
    INSERT INTO pix_transfers (id, end_to_end_id, account_id, amount_cents, pix_key, description,
                               balance_after_cents, idempotency_key, requested_by, created_at, updated_at, dispatch_due_at,
                               traceparent)
    VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), $10, $7, NULLIF($8, ''), $11, $11, now(), $9)
    RETURNING *),
event AS (
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
    SELECT 'pix_transfer', id::text, 'pix.transfer.debited',
           jsonb_build_object('schema_version', 1, 'transfer_id', id, 'end_to_end_id', end_to_end_id,
                              'account_id', account_id, 'amount_cents', amount_cents, 'pix_key', pix_key,
                              'balance_after_cents', balance_after_cents, 'debited_at', created_at), $9
    FROM transfer)
SELECT id::text, end_to_end_id, account_id, amount_cents, pix_key, description, status,
       balance_after_cents, failure_reason, created_at, submitted_at, settled_at, refunded_at
FROM transfer
