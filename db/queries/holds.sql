-- Holds (db/holds.go): money of an account set aside (I11). A statement
-- that returns a hold returns its columns in the order scanHold reads them:
-- the fragment holdColumns below. Every hold event's payload has hold_id, ref, account_id,
-- end_to_end_id, kind, amount_cents and the account's held and available
-- balance after it: pix_hold_event (migration 0055) builds them, from the
-- hold's row as the statement left it (its CTE returns it as hold_row) and
-- the account's held and balance after, with the event's own keys.
--
-- Each statement writes its events with the one fragment holdEvent
-- below (composed by the query reader, db/queries.go): its CTE hold_events
-- has a row per event, in the columns holdEvent reads (hold_row, the
-- account's held_cents and balance_cents after it, and extra, the event's
-- own keys); holdEvent writes them as events of type .Type with the
-- traceparent .Traceparent, in the order the holds were made (created_at,
-- id: a Fill's or a RaiseFillTo's events in the order they took the
-- money), and returns their ids.
{{define "holdColumns"}}id::text, ref, account_id, end_to_end_id, kind, reason, asked_cents, up_to, fill_to_cents, amount_cents, status,
       refund_id, end_reason, created_at, ended_at, fill_until{{end}}
{{define "holdEvent"}}event AS (
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
    SELECT 'pix_hold', (e.hold_row).id::text, '{{.Type}}',
           pix_hold_event(e.hold_row, e.held_cents, e.balance_cents, e.extra), {{.Traceparent}}
    FROM hold_events e
    ORDER BY (e.hold_row).created_at, (e.hold_row).id
    RETURNING id){{end}}

-- name: ByRef
-- The hold of a ref, if any: the same ref again is the same hold.
SELECT {{template "holdColumns"}}
FROM pix_holds WHERE ref = $1

-- name: Get
SELECT {{template "holdColumns"}}
FROM pix_holds WHERE id = $1

-- name: GetMany
-- Holds by their primary keys, $1 an array (a page of MED reports' holds
-- at once, not one read per row).
SELECT {{template "holdColumns"}}
FROM pix_holds WHERE id = ANY($1::uuid[])

-- name: LockHold
-- A hold, locked: it ends once, under this lock (released or captured).
SELECT {{template "holdColumns"}}
FROM pix_holds WHERE id = $1
FOR UPDATE

-- name: AccountLacking
-- What the holds of the account $1 still filling lack in all, under the
-- account's lock, when money is available (one probe of
-- pix_holds_filling_idx): db.Hold's of a new hold, one that fills or not,
-- and db's fillFromAvailable's, which fills them only if any. A new hold never
-- takes it (a cautionary block never takes what a MED lacks). Every change
-- that makes a hold lack fills it from what is available in its own
-- transaction, so it is 0 when money is available, but on an account an
-- older build left otherwise. One past its fill_until (by the database's
-- clock, as Fill) lacks nothing: no inflow fills it any more.
SELECT COALESCE(sum(fill_to_cents - amount_cents), 0)::bigint FROM pix_holds
WHERE account_id = $1 AND status = 'active' AND amount_cents < fill_to_cents
  AND (fill_until IS NULL OR statement_timestamp() < fill_until)

-- name: Hold
-- A new hold, its account's held amount and its event, in one statement,
-- on an account locked and checked already (LockForDebit; a hold of a PIX
-- after its credit's lock, LockCredit). A ref taken meanwhile (a hold with
-- it committed after ByRef looked) inserts nothing, holds nothing and
-- returns no row: the caller reads the ref's hold. $1 id, $2 ref,
-- $3 account_id, $4 end_to_end_id (NULL: none), $5 kind, $6 reason
-- ('': none), $7 asked_cents, $8 up_to, $9 amount_cents, $10 the
-- traceparent of the event, $11 fill_to_cents (NULL: a hold that does not
-- fill from later credits), $12 fill_short_cents (what the PIX's room cut
-- short of what it fills to: RaiseFillTo raises it when the PIX gets room
-- back; 0 for a hold that does not fill), $13 fill_until (NULL: it fills
-- for as long as it lacks; NULL for a hold that does not fill).
WITH hold AS (
    INSERT INTO pix_holds (id, ref, account_id, end_to_end_id, kind, reason, asked_cents, up_to, amount_cents,
                           created_at, traceparent, fill_to_cents, fill_short_cents, fill_until)
    VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), $7, $8, $9, clock_timestamp(), $10, $11, $12, $13)
    ON CONFLICT (ref) DO NOTHING
    RETURNING *, pix_holds AS hold_row),
held AS (
    UPDATE accounts a SET held_cents = a.held_cents + h.amount_cents, updated_at = h.created_at
    FROM hold h WHERE a.id = h.account_id
    RETURNING a.held_cents, a.balance_cents),
hold_events AS (
    SELECT h.hold_row, a.held_cents, a.balance_cents,
           jsonb_build_object('reason', h.reason, 'asked_cents', h.asked_cents, 'up_to', h.up_to,
                              'fill_to_cents', h.fill_to_cents, 'created_at', h.created_at) AS extra
    FROM hold h CROSS JOIN held a),
{{template "holdEvent" args "Type" "pix.hold.created" "Traceparent" "$10"}}
SELECT {{template "holdColumns"}}
FROM hold

-- name: Release
-- Ends a hold locked active (LockHold) as released: its amount leaves its
-- account's held, with its event, in one statement (db.Release then gives
-- it to the account's holds that still lack, Fill).
-- $1 id, $2 why ('': not said), $3 the traceparent of the event.
WITH released AS (
    UPDATE pix_holds SET status = 'released', end_reason = NULLIF($2, ''), ended_at = clock_timestamp()
    WHERE id = $1 AND status = 'active'
    RETURNING *, pix_holds AS hold_row),
held AS (
    UPDATE accounts a SET held_cents = a.held_cents - r.amount_cents, updated_at = r.ended_at
    FROM released r WHERE a.id = r.account_id
    RETURNING a.held_cents, a.balance_cents),
hold_events AS (
    SELECT r.hold_row, a.held_cents, a.balance_cents,
           jsonb_build_object('reason', r.end_reason, 'released_at', r.ended_at) AS extra
    FROM released r CROSS JOIN held a),
{{template "holdEvent" args "Type" "pix.hold.released" "Traceparent" "$3"}}
SELECT {{template "holdColumns"}}
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
    RETURNING *, pix_holds AS hold_row),
hold_events AS (
    SELECT c.hold_row, a.held_cents, a.balance_cents,
           jsonb_build_object('refund_id', c.refund_id, 'captured_at', c.ended_at) AS extra
    FROM captured c JOIN accounts a ON a.id = c.account_id),
{{template "holdEvent" args "Type" "pix.hold.captured" "Traceparent" "$4"}}
SELECT {{template "holdColumns"}}
FROM captured

-- name: Fill
-- The fills of money just come back to an account (db.FillHolds: a PIX
-- credited, a transfer refunded, a devolução reversed, in its own
-- transaction, after it raised the balance): in one statement, each hold
-- of the account still filling, in the order they were made (created_at,
-- id), takes what it lacks of what the inflow brought and the holds
-- before it left (so the first is filled first, and the inflow is never
-- given twice); each fill adds to the hold, to the account's held amount,
-- to pix_hold_fills (one row per hold and source: its primary key refuses
-- a second) and writes its event, whose held and available are the
-- account's just after that fill. Runs under the account's lock, taken by
-- the inflow before this statement (every change of an account's holds
-- takes it first: docs/design.md, "Lock order"), in a statement that
-- starts after it: it sees every hold as it is. A hold at or past its
-- fill_until (NewHold.FillUntil) takes nothing, and what it lacks is left
-- to the holds after it: decided by the database's clock at this
-- statement's start (statement_timestamp(), after the account's lock: an
-- inflow that waited for it past a hold's fill_until does not fill that
-- hold), as a filter on the rows the index probe finds (no other scan, no
-- round trip of its own). Nothing else changes: the
-- balance and its event are the inflow's. $1 the source's kind ('credit',
-- 'transfer_refund', 'refund_reversal'), $2 its id (the PIX's
-- end_to_end_id, the transfer's id, the refund's id), $3 account_id,
-- $4 the amount come back, $5 the traceparent of the events. Returns
-- each hold filled (its id, ref, kind) and what it was filled by, in the
-- order they were made: none when nothing filled.
WITH filling AS (
    SELECT id, fill_to_cents - amount_cents AS lacking,
           (sum(fill_to_cents - amount_cents) OVER (ORDER BY created_at, id) - (fill_to_cents - amount_cents))::bigint AS before
    FROM pix_holds
    WHERE account_id = $3 AND status = 'active' AND amount_cents < fill_to_cents
      AND (fill_until IS NULL OR statement_timestamp() < fill_until)),
fill AS (
    SELECT id, LEAST(lacking, $4 - before) AS cents FROM filling WHERE before < $4),
filled AS (
    UPDATE pix_holds h SET amount_cents = h.amount_cents + f.cents
    FROM fill f WHERE h.id = f.id AND h.status = 'active'
    RETURNING h.*, h AS hold_row, f.cents),
-- What the fills after each one added: its event's held and available
-- are the account's after it, before the next.
progress AS (
    SELECT f.*, COALESCE(sum(f.cents) OVER (ORDER BY f.created_at, f.id ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING),
                         0)::bigint AS later
    FROM filled f),
held AS (
    UPDATE accounts a SET held_cents = a.held_cents + t.cents, updated_at = clock_timestamp()
    FROM (SELECT sum(cents)::bigint AS cents FROM filled) t
    WHERE a.id = $3 AND t.cents > 0
    RETURNING a.held_cents, a.balance_cents, a.updated_at),
record AS (
    INSERT INTO pix_hold_fills (hold_id, source_kind, source_id, amount_cents, amount_after_cents, filled_at)
    SELECT f.id, $1, $2, f.cents, f.amount_cents, a.updated_at FROM filled f CROSS JOIN held a),
hold_events AS (
    SELECT p.hold_row, a.held_cents - p.later AS held_cents, a.balance_cents,
           jsonb_build_object('source_kind', $1::text, 'source_id', $2::text, 'filled_cents', p.cents,
                              'fill_to_cents', p.fill_to_cents, 'filled_at', a.updated_at) AS extra
    FROM progress p CROSS JOIN held a),
{{template "holdEvent" args "Type" "pix.hold.filled" "Traceparent" "$5"}}
SELECT id::text, ref, kind, cents FROM filled ORDER BY created_at, id

-- name: Shrink
-- Shrinks a hold locked active (LockHold) in place to hold, and fill to,
-- at most $2 (db.Shrink): what it holds beyond leaves its account's held,
-- with its event, in one statement; a hold that does not fill stays one.
-- What it may be raised to (fill_to_cents + fill_short_cents: RaiseFillTo)
-- is at most $2 too, so that a hold shrunk to what its holder still needs
-- is never raised past it.
-- Returns the hold, then what left the held (which db.Shrink gives to the
-- account's holds that still lack, Fill) and the event's id (that fill's
-- source). A hold within $2 already changes nothing and returns no row (a
-- retry). $1 id, $2 the most it keeps, $3 why ('': not said), $4 the
-- traceparent of the event.
WITH before AS (
    SELECT id, amount_cents FROM pix_holds WHERE id = $1),
shrunk AS (
    UPDATE pix_holds h SET amount_cents = LEAST(h.amount_cents, $2),
                           fill_to_cents = CASE WHEN h.fill_to_cents IS NULL THEN NULL ELSE LEAST(h.fill_to_cents, $2) END,
                           fill_short_cents = CASE WHEN h.fill_to_cents IS NULL THEN 0
                                                   ELSE LEAST(h.fill_to_cents + h.fill_short_cents, $2) - LEAST(h.fill_to_cents, $2) END
    FROM before b
    WHERE h.id = b.id AND h.status = 'active'
      AND (h.amount_cents > $2 OR h.fill_to_cents > $2 OR h.fill_to_cents + h.fill_short_cents > $2)
    RETURNING h.*, h AS hold_row, b.amount_cents - h.amount_cents AS released_cents, clock_timestamp() AS shrunk_at),
held AS (
    UPDATE accounts a SET held_cents = a.held_cents - s.released_cents, updated_at = s.shrunk_at
    FROM shrunk s WHERE a.id = s.account_id
    RETURNING a.held_cents, a.balance_cents),
hold_events AS (
    SELECT s.hold_row, a.held_cents, a.balance_cents,
           jsonb_build_object('fill_to_cents', s.fill_to_cents, 'released_cents', s.released_cents,
                              'reason', NULLIF($3, ''), 'shrunk_at', s.shrunk_at) AS extra
    FROM shrunk s CROSS JOIN held a),
{{template "holdEvent" args "Type" "pix.hold.shrunk" "Traceparent" "$4"}}
SELECT s.id::text, s.ref, s.account_id, s.end_to_end_id, s.kind, s.reason, s.asked_cents, s.up_to, s.fill_to_cents,
       s.amount_cents, s.status, s.refund_id, s.end_reason, s.created_at, s.ended_at, s.fill_until, s.released_cents, e.id::text
FROM shrunk s CROSS JOIN event e

-- name: SetFillUntil
-- Sets fill_until $2 on a hold that fills, locked active (LockHold: its
-- account's lock first, the lock order) and made without one (before
-- migration 0063, or by an older build while a release rolls out):
-- db.SetFillUntil. One set already is never moved (a retry changes
-- nothing and returns no row). No money moves and no event is written:
-- the fence only stops later inflows filling it (Fill). $1 id.
UPDATE pix_holds SET fill_until = $2
WHERE id = $1 AND status = 'active' AND fill_to_cents IS NOT NULL AND fill_until IS NULL
RETURNING {{template "holdColumns"}}

-- name: MakeFilling
-- Makes a hold locked active (LockHold) that does not fill (fill_to_cents
-- NULL: made before holds filled) one that fills (db.MakeFilling): it
-- fills to $2 and is cut short of its holder's need by $3 (what its PIX's
-- room leaves out: RaiseFillTo raises it), holding what it held; with its
-- event. A hold that fills already, or ended, changes nothing and returns
-- no row. $1 id, $2 fill_to_cents, $3 fill_short_cents, $4 why ('': not
-- said), $5 the traceparent of the event.
WITH made AS (
    UPDATE pix_holds SET fill_to_cents = $2, fill_short_cents = $3
    WHERE id = $1 AND status = 'active' AND fill_to_cents IS NULL AND up_to
    RETURNING *, pix_holds AS hold_row, clock_timestamp() AS made_at),
hold_events AS (
    SELECT m.hold_row, a.held_cents, a.balance_cents,
           jsonb_build_object('fill_to_cents', m.fill_to_cents, 'fill_short_cents', m.fill_short_cents,
                              'reason', NULLIF($4, ''), 'made_at', m.made_at) AS extra
    FROM made m JOIN accounts a ON a.id = m.account_id),
{{template "holdEvent" args "Type" "pix.hold.made_filling" "Traceparent" "$5"}}
SELECT {{template "holdColumns"}}
FROM made

-- name: CapturePart
-- Captures $3 of a hold that fills, locked active (LockHold), by the
-- devolução $2, recorded in this transaction with its debit, which took
-- $3 out of the account's held with the balance (accounts.Debit's $3),
-- and keeps it active (db.NewRefund.KeepHold): it holds and fills to $3
-- less, and the part is recorded (pix_hold_parts) for the devolução's
-- reversal to give back (Restore); with its event. $1 id, $2 refund id,
-- $3 the part, $4 the debit's time, $5 the traceparent of the event.
WITH part AS (
    INSERT INTO pix_hold_parts (refund_id, hold_id, amount_cents, captured_at)
    VALUES ($2, $1, $3, $4)
    RETURNING *),
kept AS (
    UPDATE pix_holds h SET amount_cents = h.amount_cents - p.amount_cents, fill_to_cents = h.fill_to_cents - p.amount_cents
    FROM part p WHERE h.id = p.hold_id AND h.status = 'active' AND h.fill_to_cents IS NOT NULL
    RETURNING h.*, h AS hold_row, p.amount_cents AS captured_cents, p.refund_id AS part_refund_id, p.captured_at),
hold_events AS (
    SELECT k.hold_row, a.held_cents, a.balance_cents,
           jsonb_build_object('captured_cents', k.captured_cents, 'fill_to_cents', k.fill_to_cents,
                              'refund_id', k.part_refund_id, 'captured_at', k.captured_at) AS extra
    FROM kept k JOIN accounts a ON a.id = k.account_id),
{{template "holdEvent" args "Type" "pix.hold.part_captured" "Traceparent" "$5"}}
SELECT {{template "holdColumns"}}
FROM kept

-- name: Restore
-- Gives the part the devolução $1 captured of a hold kept active
-- (CapturePart) back to that hold, once, in the transaction of the
-- devolução's reversal, after it credited the money back (under the
-- account's lock it took: the lock order stays, the account then the
-- hold): the hold holds and fills to the part more, its account's held
-- grows by it (the money back is held, not available), the part is marked
-- restored (restored_at: a second call restores nothing), with its event.
-- A hold that ended meanwhile takes nothing back, nor one at or past its
-- fill_until (by the database's clock at this statement's start, after the
-- account's lock, as Fill: the money back would be held from the customer
-- when no inflow fills that hold any more): the part stays unrestored, and
-- the reversal gives that money to the PIX's room and the account's holds
-- that fill (RaiseFillTo, Fill), else it is available. $1 refund id, $2
-- the traceparent of the event. Returns what was restored.
WITH part AS (
    UPDATE pix_hold_parts p SET restored_at = clock_timestamp()
    FROM pix_holds h
    WHERE p.refund_id = $1 AND p.restored_at IS NULL AND h.id = p.hold_id AND h.status = 'active'
      AND (h.fill_until IS NULL OR statement_timestamp() < h.fill_until)
    RETURNING p.*),
restored AS (
    UPDATE pix_holds h SET amount_cents = h.amount_cents + p.amount_cents, fill_to_cents = h.fill_to_cents + p.amount_cents
    FROM part p WHERE h.id = p.hold_id AND h.status = 'active'
    RETURNING h.*, h AS hold_row, p.amount_cents AS restored_cents, p.refund_id AS part_refund_id, p.restored_at),
held AS (
    UPDATE accounts a SET held_cents = a.held_cents + r.restored_cents, updated_at = r.restored_at
    FROM restored r WHERE a.id = r.account_id
    RETURNING a.held_cents, a.balance_cents),
hold_events AS (
    SELECT r.hold_row, a.held_cents, a.balance_cents,
           jsonb_build_object('restored_cents', r.restored_cents, 'fill_to_cents', r.fill_to_cents,
                              'refund_id', r.part_refund_id, 'restored_at', r.restored_at) AS extra
    FROM restored r CROSS JOIN held a),
{{template "holdEvent" args "Type" "pix.hold.restored" "Traceparent" "$2"}}
SELECT COALESCE(sum(restored_cents), 0)::bigint FROM restored

-- name: RaiseFillTo
-- Raises what the active holds of the PIX $1 that fill, but the hold $3
-- (NULL: none), fill to, by what the PIX's room cut short of it
-- (fill_short_cents), with the room $2 the PIX just got back (db.Release,
-- db.Shrink: what the hold of it reserved, TakenCents; a devolução of it
-- reversed: what its hold's RestoreHold did not take back): each, in the
-- order they were made, takes what it is short of what the room and the
-- holds before it left, with its event. So a MED's hold made while a block
-- or a devolução of its PIX took part of it fills again to what it asked,
-- once that part is free. The room moves from what freed it to the holds
-- raised, in the freeing transaction: the PIX's devoluções and active
-- holds never take more than its credit, without its credit's lock (no
-- other transaction can take room the freeing hold or devolução still
-- has). Under the account's lock, taken by the caller before (every hold of
-- a PIX is its account's; the lock order stays the account, then the
-- holds), before the freed money fills anything (Fill): the holds raised
-- take it in their turn. Nothing held changes. $4 the source's kind
-- ('hold_release', 'hold_shrink', 'refund_reversal'), $5 its id, $6 the
-- traceparent of the events. A hold at or past its fill_until is not
-- raised (the same rule and clock as Fill): no inflow fills it any more, so
-- room raised into it would be reserved of the PIX for nothing (a block or
-- a devolução of it refused); it stays short, and the room goes to the
-- holds after it, else stays the PIX's. Returns what was raised in all.
WITH short AS (
    SELECT id, fill_short_cents AS short,
           (sum(fill_short_cents) OVER (ORDER BY created_at, id) - fill_short_cents)::bigint AS before
    FROM pix_holds
    WHERE end_to_end_id = $1 AND status = 'active' AND fill_short_cents > 0 AND id IS DISTINCT FROM $3::uuid
      AND (fill_until IS NULL OR statement_timestamp() < fill_until)),
raise AS (
    SELECT id, LEAST(short, $2 - before) AS cents FROM short WHERE before < $2),
raised AS (
    UPDATE pix_holds h SET fill_to_cents = h.fill_to_cents + r.cents, fill_short_cents = h.fill_short_cents - r.cents
    FROM raise r WHERE h.id = r.id AND h.status = 'active'
    RETURNING h.*, h AS hold_row, r.cents, clock_timestamp() AS raised_at),
hold_events AS (
    SELECT r.hold_row, a.held_cents, a.balance_cents,
           jsonb_build_object('fill_to_cents', r.fill_to_cents, 'raised_cents', r.cents,
                              'fill_short_cents', r.fill_short_cents, 'source_kind', $4::text,
                              'source_id', $5::text, 'raised_at', r.raised_at) AS extra
    FROM raised r JOIN accounts a ON a.id = r.account_id),
{{template "holdEvent" args "Type" "pix.hold.fill_raised" "Traceparent" "$6"}}
SELECT COALESCE(sum(cents), 0)::bigint FROM raised
