-- The durable queues' statements as they were written by hand, one copy per
-- saga, before they were built from each queue's declaration (QueueSpec):
-- a frozen oracle that TestDeclaredQueuesBuildTheStatementsWrittenByHand
-- compares the built statements with. Do not edit.

-- name: credits.ClaimDue
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
    jsonb_strip_nulls(jsonb_build_object(
        -- Bounded, and text only: the memo travels in every start of the
        -- credit (Temporal refuses one over its memo limit, for ever), and a
        -- PSP's informational members may hold anything PostgreSQL stores.
        'payer', (SELECT jsonb_object_agg(left(p.key, 64), left(p.value, 140))
                  FROM (SELECT e.key, e.value FROM jsonb_each_text(
                            CASE WHEN jsonb_typeof(COALESCE(m.payload->'payer', m.payload->'pagador')) = 'object'
                                 THEN COALESCE(m.payload->'payer', m.payload->'pagador') END) AS e
                        ORDER BY e.key LIMIT 8) AS p),
        'payer_message', left(m.payload->>'infoPagador', 140))),
    m.received_at, m.traceparent

-- name: credits.MarkDispatched
-- (see DueQueue): a start that began a run sets dispatched_at to now and
-- waits $4; a recheck that found the run open waits as long as the run has
-- been open, between $4 and $5.
WITH fenced AS (
    SELECT m.end_to_end_id AS key, c.began FROM inbox_messages m
    JOIN unnest($1::text[], $2::int[], $3::bool[]) AS c(key, drive, began) ON m.end_to_end_id = c.key
    WHERE m.status = 'pending' AND m.drive = c.drive
    ORDER BY m.end_to_end_id COLLATE "C"
    FOR UPDATE OF m)
UPDATE inbox_messages m SET dispatched_at = CASE WHEN fenced.began THEN now() ELSE COALESCE(m.dispatched_at, now()) END,
    dispatch_due_at = now() + CASE WHEN fenced.began THEN $4::interval
        ELSE LEAST(GREATEST($4::interval, now() - COALESCE(m.dispatched_at, now())), $5::interval) END
FROM fenced WHERE m.end_to_end_id = fenced.key

-- name: credits.DeferDispatch
WITH fenced AS (
    SELECT m.end_to_end_id AS key FROM inbox_messages m
    JOIN unnest($1::text[], $2::int[]) AS c(key, drive) ON m.end_to_end_id = c.key
    WHERE m.status = 'pending' AND m.drive = c.drive
    ORDER BY m.end_to_end_id COLLATE "C"
    FOR UPDATE OF m)
UPDATE inbox_messages m SET dispatch_due_at = now() + $3::interval
FROM fenced WHERE m.end_to_end_id = fenced.key

-- name: transfers.ClaimDue
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
    jsonb_build_object('payee_pix_key', m.pix_key), m.created_at, m.traceparent

-- name: transfers.MarkDispatched
WITH fenced AS (
    SELECT m.id AS key, c.began FROM pix_transfers m
    JOIN unnest($1::uuid[], $2::int[], $3::bool[]) AS c(key, drive, began) ON m.id = c.key
    WHERE m.dispatch_due_at IS NOT NULL AND 1 = c.drive
    ORDER BY m.id
    FOR UPDATE OF m)
UPDATE pix_transfers m SET dispatched_at = CASE WHEN fenced.began THEN now() ELSE COALESCE(m.dispatched_at, now()) END,
    dispatch_due_at = now() + CASE WHEN fenced.began THEN $4::interval
        ELSE LEAST(GREATEST($4::interval, now() - COALESCE(m.dispatched_at, now())), $5::interval) END
FROM fenced WHERE m.id = fenced.key

-- name: transfers.DeferDispatch
WITH fenced AS (
    SELECT m.id AS key FROM pix_transfers m
    JOIN unnest($1::uuid[], $2::int[]) AS c(key, drive) ON m.id = c.key
    WHERE m.dispatch_due_at IS NOT NULL AND 1 = c.drive
    ORDER BY m.id
    FOR UPDATE OF m)
UPDATE pix_transfers m SET dispatch_due_at = now() + $3::interval
FROM fenced WHERE m.id = fenced.key

-- name: refunds.ClaimDue
-- The open refunds due for dispatch (see DueQueue). A refund's drive is
-- 1 + its notices: its memo carries the outcome a PSP's webhook announced
-- (psp_notice), which the dispatcher signals to the refund's open run, and
-- a notice that arrives after the claim makes the claim's records no-ops.
UPDATE pix_refunds m SET dispatch_due_at = now() + $2::interval
FROM (
    SELECT m.id FROM pix_refunds m
    WHERE m.dispatch_due_at IS NOT NULL AND m.dispatch_due_at <= now()
    ORDER BY dispatch_due_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
) due
WHERE m.id = due.id
RETURNING m.id, 0, 1 + m.notices, m.dispatched_at IS NOT NULL,
    m.end_to_end_id, m.account_id, m.amount_cents, m.status, NULL::text,
    jsonb_strip_nulls(jsonb_build_object('refund_id', m.id,
        'psp_notice', CASE WHEN m.notices > m.signalled_notices THEN m.psp_notice END)), m.created_at, m.traceparent

-- name: refunds.MarkDispatched
-- The refund's run runs (dispatched_at, whatever came since the claim),
-- and the notices known at the claim are signalled (or read by a new run):
-- the next recheck does not signal them again. Only the recheck's due time
-- is fenced by the claim's drive (1 + its notices): a notice that arrived
-- since keeps the refund due now, to be signalled.
WITH fenced AS (
    SELECT m.id AS key, c.drive, c.began FROM pix_refunds m
    JOIN unnest($1::text[], $2::int[], $3::bool[]) AS c(key, drive, began) ON m.id = c.key
    WHERE m.dispatch_due_at IS NOT NULL
    ORDER BY m.id COLLATE "C"
    FOR UPDATE OF m)
UPDATE pix_refunds m SET dispatched_at = CASE WHEN fenced.began THEN now() ELSE COALESCE(m.dispatched_at, now()) END,
    dispatch_due_at = CASE WHEN 1 + m.notices = fenced.drive
        THEN now() + CASE WHEN fenced.began THEN $4::interval
        ELSE LEAST(GREATEST($4::interval, now() - COALESCE(m.dispatched_at, now())), $5::interval) END ELSE m.dispatch_due_at END,
    signalled_notices = GREATEST(m.signalled_notices, fenced.drive - 1)
FROM fenced WHERE m.id = fenced.key

-- name: refunds.DeferDispatch
WITH fenced AS (
    SELECT m.id AS key FROM pix_refunds m
    JOIN unnest($1::text[], $2::int[]) AS c(key, drive) ON m.id = c.key
    WHERE m.dispatch_due_at IS NOT NULL AND 1 + m.notices = c.drive
    ORDER BY m.id COLLATE "C"
    FOR UPDATE OF m)
UPDATE pix_refunds m SET dispatch_due_at = now() + $3::interval
FROM fenced WHERE m.id = fenced.key
