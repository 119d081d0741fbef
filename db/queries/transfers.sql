-- Outgoing transfers: db/transfers.go runs these.

-- name: ClaimDue
-- The open transfers due for dispatch (see DueQueue). A transfer has one
-- drive: it stays open until it is final.
UPDATE pix_transfers m SET dispatch_due_at = now() + $2::interval
FROM (
    SELECT m.id FROM pix_transfers m
    WHERE m.dispatch_due_at IS NOT NULL AND m.dispatch_due_at <= now()
    ORDER BY dispatch_due_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
) due
WHERE m.id = due.id
RETURNING m.id::text, 0, 1, m.dispatched_at IS NOT NULL,
    m.end_to_end_id, m.account_id, m.amount_cents, m.status, NULL::text,
    jsonb_build_object('payee_pix_key', m.pix_key), m.created_at

-- name: MarkDispatched
WITH fenced AS (
    SELECT m.id AS key FROM pix_transfers m
    JOIN unnest($1::uuid[], $2::int[]) AS c(key, drive) ON m.id = c.key
    WHERE m.dispatch_due_at IS NOT NULL AND 1 = c.drive
    ORDER BY m.id
    FOR UPDATE OF m)
UPDATE pix_transfers m SET dispatched_at = COALESCE(m.dispatched_at, now()), dispatch_due_at = now() + $3::interval
FROM fenced WHERE m.id = fenced.key

-- name: DeferDispatch
WITH fenced AS (
    SELECT m.id AS key FROM pix_transfers m
    JOIN unnest($1::uuid[], $2::int[]) AS c(key, drive) ON m.id = c.key
    WHERE m.dispatch_due_at IS NOT NULL AND 1 = c.drive
    ORDER BY m.id
    FOR UPDATE OF m)
UPDATE pix_transfers m SET dispatch_due_at = now() + $3::interval
FROM fenced WHERE m.id = fenced.key
