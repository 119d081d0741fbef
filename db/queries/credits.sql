-- The credits of received PIX (the inbox): db/inbox.go runs these.

-- name: ClaimDue
-- The pending inbox rows due for dispatch (see DueQueue).
UPDATE inbox_messages m SET dispatch_due_at = now() + $2::interval
FROM (
    SELECT m.end_to_end_id FROM inbox_messages m
    WHERE m.status = 'pending' AND m.dispatch_due_at <= now()
    ORDER BY dispatch_due_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
) due
WHERE m.end_to_end_id = due.end_to_end_id
RETURNING m.end_to_end_id::text, m.attempts, m.drive, m.dispatched_at IS NOT NULL,
    m.end_to_end_id, m.account_id, m.amount_cents, m.status, m.psp,
    jsonb_strip_nulls(jsonb_build_object('payer', COALESCE(m.payload->'payer', m.payload->'pagador'), 'payer_message', m.payload->'infoPagador')),
    m.received_at

-- name: MarkDispatched
WITH fenced AS (
    SELECT m.end_to_end_id AS key FROM inbox_messages m
    JOIN unnest($1::text[], $2::int[]) AS c(key, drive) ON m.end_to_end_id = c.key
    WHERE m.status = 'pending' AND m.drive = c.drive
    ORDER BY m.end_to_end_id COLLATE "C"
    FOR UPDATE OF m)
UPDATE inbox_messages m SET dispatched_at = COALESCE(m.dispatched_at, now()), dispatch_due_at = now() + $3::interval
FROM fenced WHERE m.end_to_end_id = fenced.key

-- name: DeferDispatch
WITH fenced AS (
    SELECT m.end_to_end_id AS key FROM inbox_messages m
    JOIN unnest($1::text[], $2::int[]) AS c(key, drive) ON m.end_to_end_id = c.key
    WHERE m.status = 'pending' AND m.drive = c.drive
    ORDER BY m.end_to_end_id COLLATE "C"
    FOR UPDATE OF m)
UPDATE inbox_messages m SET dispatch_due_at = now() + $3::interval
FROM fenced WHERE m.end_to_end_id = fenced.key
