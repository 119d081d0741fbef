-- Holds (db/holds.go): money of an account set aside (I11). A statement
-- that returns a hold returns its columns in the order scanHold reads them:
-- id::text, ref, account_id, end_to_end_id, kind, reason, asked_cents,
-- up_to, amount_cents, status, refund_id, end_reason, created_at,
-- ended_at. Every hold event's payload has hold_id, ref, account_id,
-- end_to_end_id, kind, amount_cents and the account's held and available
-- balance after it.

-- name: ByRef
-- The hold of a ref, if any: the same ref again is the same hold.
SELECT id::text, ref, account_id, end_to_end_id, kind, reason, asked_cents, up_to, amount_cents, status, refund_id,
       end_reason, created_at, ended_at
FROM pix_holds WHERE ref = $1

-- name: Get
SELECT id::text, ref, account_id, end_to_end_id, kind, reason, asked_cents, up_to, amount_cents, status, refund_id,
       end_reason, created_at, ended_at
FROM pix_holds WHERE id = $1

-- name: LockHold
-- A hold, locked: it ends once, under this lock (released or captured).
SELECT id::text, ref, account_id, end_to_end_id, kind, reason, asked_cents, up_to, amount_cents, status, refund_id,
       end_reason, created_at, ended_at
FROM pix_holds WHERE id = $1
FOR UPDATE

-- name: Hold
-- A new hold, its account's held amount and its event, in one statement,
-- on an account locked and checked already (LockForDebit; a hold of a PIX
-- after its credit's lock, LockCredit). A ref taken meanwhile (a hold with
-- it committed after ByRef looked) inserts nothing, holds nothing and
-- returns no row: the caller reads the ref's hold. $1 id, $2 ref,
-- $3 account_id, $4 end_to_end_id (NULL: none), $5 kind, $6 reason
-- ('': none), $7 asked_cents, $8 up_to, $9 amount_cents, $10 the
-- traceparent of the event.
WITH hold AS (
    INSERT INTO pix_holds (id, ref, account_id, end_to_end_id, kind, reason, asked_cents, up_to, amount_cents,
                           created_at, traceparent)
    VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), $7, $8, $9, clock_timestamp(), $10)
    ON CONFLICT (ref) DO NOTHING
    RETURNING *),
held AS (
    UPDATE accounts a SET held_cents = a.held_cents + h.amount_cents, updated_at = h.created_at
    FROM hold h WHERE a.id = h.account_id
    RETURNING a.held_cents, a.balance_cents - a.held_cents AS available_cents),
event AS (
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
    SELECT 'pix_hold', h.id::text, 'pix.hold.created',
           jsonb_build_object('schema_version', 1, 'hold_id', h.id, 'ref', h.ref, 'account_id', h.account_id,
                              'end_to_end_id', h.end_to_end_id, 'kind', h.kind, 'amount_cents', h.amount_cents,
                              'held_after_cents', a.held_cents, 'available_after_cents', a.available_cents,
                              'reason', h.reason, 'asked_cents', h.asked_cents, 'up_to', h.up_to,
                              'created_at', h.created_at), $10
    FROM hold h CROSS JOIN held a)
SELECT id::text, ref, account_id, end_to_end_id, kind, reason, asked_cents, up_to, amount_cents, status, refund_id,
       end_reason, created_at, ended_at
FROM hold

-- name: Release
-- Ends a hold locked active (LockHold) as released: its amount leaves its
-- account's held (spendable again), with its event, in one statement.
-- $1 id, $2 why ('': not said), $3 the traceparent of the event.
WITH released AS (
    UPDATE pix_holds SET status = 'released', end_reason = NULLIF($2, ''), ended_at = clock_timestamp()
    WHERE id = $1 AND status = 'active'
    RETURNING *),
held AS (
    UPDATE accounts a SET held_cents = a.held_cents - r.amount_cents, updated_at = r.ended_at
    FROM released r WHERE a.id = r.account_id
    RETURNING a.held_cents, a.balance_cents - a.held_cents AS available_cents),
event AS (
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
    SELECT 'pix_hold', r.id::text, 'pix.hold.released',
           jsonb_build_object('schema_version', 1, 'hold_id', r.id, 'ref', r.ref, 'account_id', r.account_id,
                              'end_to_end_id', r.end_to_end_id, 'kind', r.kind, 'amount_cents', r.amount_cents,
                              'held_after_cents', a.held_cents, 'available_after_cents', a.available_cents,
                              'reason', r.end_reason, 'released_at', r.ended_at), $3
    FROM released r CROSS JOIN held a)
SELECT id::text, ref, account_id, end_to_end_id, kind, reason, asked_cents, up_to, amount_cents, status, refund_id,
       end_reason, created_at, ended_at
FROM released

-- name: Capture
-- Ends a hold locked active (LockHold) as captured by the devolução $2,
-- recorded in this transaction with its debit, which took the hold's
-- amount out of the account's held with the balance (accounts.Debit's
-- $3): with its event. $1 id, $2 refund id, $3 the debit's time, $4 the
-- traceparent of the event.
WITH captured AS (
    UPDATE pix_holds SET status = 'captured', refund_id = $2, ended_at = $3
    WHERE id = $1 AND status = 'active'
    RETURNING *),
event AS (
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
    SELECT 'pix_hold', c.id::text, 'pix.hold.captured',
           jsonb_build_object('schema_version', 1, 'hold_id', c.id, 'ref', c.ref, 'account_id', c.account_id,
                              'end_to_end_id', c.end_to_end_id, 'kind', c.kind, 'amount_cents', c.amount_cents,
                              'held_after_cents', a.held_cents, 'available_after_cents', a.balance_cents - a.held_cents,
                              'refund_id', c.refund_id, 'captured_at', c.ended_at), $4
    FROM captured c JOIN accounts a ON a.id = c.account_id)
SELECT id::text, ref, account_id, end_to_end_id, kind, reason, asked_cents, up_to, amount_cents, status, refund_id,
       end_reason, created_at, ended_at
FROM captured
