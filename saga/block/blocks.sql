-- The cautionary block's statements, bound by its store (db.BindQueries).
-- A statement that returns a block returns its row (*), which the store
-- reads by column name (row in store.go). Every event of a block has one
-- payload (pix_block_event, migration 0033): block_id, end_to_end_id,
-- account_id, hold_id, amount_cents, status, end_cause, expires_at,
-- refund_id, at.

-- name: CreditOf
-- The PIX's credit: whose it is. Read without a lock (an account of a
-- credit never changes); db.Hold then locks the credit and the account.
SELECT account_id FROM pix_credits WHERE end_to_end_id = $1

-- name: Create
-- The row and its created event (the customer's notice), in the
-- transaction of its hold. $1 id, $2 end_to_end_id, $3 account_id,
-- $4 hold_id, $5 amount_cents, $6 reason, $7 expires_at, $8 requested_by,
-- $9 idempotency_key, $10 traceparent. Due at once for its dispatcher:
-- its run starts now and sleeps until expires_at.
WITH block AS (
    INSERT INTO pix_blocks (id, end_to_end_id, account_id, hold_id, amount_cents, reason, expires_at,
                            requested_by, idempotency_key, traceparent, dispatch_due_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now())
    RETURNING *),
event AS (
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
    SELECT 'pix_block', id::text, 'pix.block.created', pix_block_event(block::pix_blocks, created_at), traceparent
    FROM block)
SELECT * FROM block

-- name: Get
SELECT * FROM pix_blocks WHERE id = $1

-- name: Lock
-- The row, locked for a decision (release, return, expiry, the end of its
-- devolução): whichever takes the lock first decides, the others see its
-- decision. Taken before any lock of the core (credit, account, hold).
SELECT * FROM pix_blocks WHERE id = $1 FOR UPDATE

-- name: OfPIX
-- A page of a PIX's blocks, oldest first: $1 end_to_end_id, $2, $3 the
-- sort key of the last row of the page before (NULL, NULL: from the
-- first), $4 at most. Read from pix_blocks_pix_idx.
SELECT * FROM pix_blocks
WHERE end_to_end_id = $1
  AND (created_at, id) > (COALESCE($2::timestamptz, '-infinity'), COALESCE($3::uuid, '00000000-0000-0000-0000-000000000000'))
ORDER BY created_at, id LIMIT $4

-- name: Returning
-- An active block handed to its devolução ($2, recorded in this
-- transaction, which captured its hold), with its event. $3 who asked.
-- Only from active (the state it was decided on): otherwise no row.
WITH block AS (
    UPDATE pix_blocks SET status = 'returning', refund_id = $2, ended_by = $3, updated_at = now()
    WHERE id = $1 AND status = 'active'
    RETURNING *),
event AS (
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
    SELECT 'pix_block', id::text, 'pix.block.returning', pix_block_event(block::pix_blocks, updated_at), $4
    FROM block)
SELECT * FROM block

-- name: End
-- Ends a block that is $2 (the state it was decided on: active, or
-- returning) as $3 (released, returned) for $4 (operator, expired,
-- return_not_made, returned), with its event (pix.block.<status>), and
-- closes its queue entry. $5 who ended it (NULL: its saga, or the one who
-- asked for the return), $6 the event's traceparent. A block no longer $2
-- is left as it is (no row).
WITH block AS (
    UPDATE pix_blocks SET status = $3, end_cause = $4, ended_by = COALESCE($5, ended_by),
        ended_at = now(), updated_at = now(), dispatch_due_at = NULL
    WHERE id = $1 AND status = $2
    RETURNING *),
event AS (
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
    SELECT 'pix_block', id::text, 'pix.block.' || status, pix_block_event(block::pix_blocks, ended_at), $6
    FROM block)
SELECT * FROM block

-- name: Open
-- The gauges: the open blocks by age (under 24 h, 24 to 48, 48 to 72,
-- over 72), the centavos the active ones hold, and the active ones past
-- their expires_at by more than $1 (a release lost or stuck:
-- PixBlockOpenPast72h). From pix_blocks_open_idx: the open ones only.
SELECT count(*) FILTER (WHERE created_at > now() - interval '24 hours'),
       count(*) FILTER (WHERE created_at <= now() - interval '24 hours' AND created_at > now() - interval '48 hours'),
       count(*) FILTER (WHERE created_at <= now() - interval '48 hours' AND created_at > now() - interval '72 hours'),
       count(*) FILTER (WHERE created_at <= now() - interval '72 hours'),
       COALESCE(sum(amount_cents) FILTER (WHERE status = 'active'), 0),
       count(*) FILTER (WHERE status = 'active' AND expires_at < now() - $1::interval)
FROM pix_blocks WHERE status IN ('active', 'returning')
