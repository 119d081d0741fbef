-- The reconciliation (db/reconcile.go): the books checked from a checkpoint
-- (migration 0024; docs/design.md, "The reconciliation"). One run is one
-- REPEATABLE READ transaction: every check reads the same snapshot, and the
-- checkpoint moves in the same commit. Each check reads what is new since
-- the last run (by its index) and the accounts; never the history.

-- name: RepeatableRead
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ

-- name: Snapshot
-- The transaction's first query, which takes its snapshot: the snapshot's
-- xmin (every transaction below it has ended: committed, and seen, or
-- rolled back) and the time, read before the run writes anything (its own
-- transaction id, assigned by its first write, is later than every id
-- assigned before this time).
SELECT pg_snapshot_xmin(pg_current_snapshot()), clock_timestamp()

-- name: Checkpoint
-- The checkpoint, locked: a run that committed after this run's snapshot
-- makes this a serialization failure, and the run starts again from the
-- new checkpoint (db.InTx).
SELECT settled_before, done_from, done_without_credit, refunds_over_credit FROM reconcile_checkpoint FOR UPDATE

-- name: Unbalanced
-- The accounts whose balance is not their opening balance plus their
-- movements (the view account_movements, to which every saga that moves
-- money adds its tables; invariant I2): the settled sum of those below the
-- last run's snapshot xmin $1 (NULL: none settled yet), plus those from $1
-- on that this snapshot sees. Every account is compared; only the new
-- movements are read, each table's through its xact_id index.
SELECT a.id FROM accounts a
LEFT JOIN reconcile_settled s ON s.account_id = a.id
LEFT JOIN (SELECT account_id, sum(amount_cents) AS cents FROM account_movements
           WHERE $1::xid8 IS NULL OR xact_id >= $1 GROUP BY account_id) n ON n.account_id = a.id
WHERE a.balance_cents <> a.opening_balance_cents + COALESCE(s.settled_cents, 0) + COALESCE(n.cents, 0)
ORDER BY a.id

-- name: UnbalancedHolds
-- The accounts whose held amount is not the sum of their active holds
-- (I11). Holds are not movements: held changes with the holds, under the
-- account's lock, in the transaction that starts or ends one, so this
-- snapshot sees both as they are and every run compares them whole. Every
-- account is compared; the active holds come from their partial index,
-- the live edge of the holds.
SELECT a.id FROM accounts a
LEFT JOIN (SELECT account_id, sum(amount_cents) AS cents FROM pix_holds WHERE status = 'active' GROUP BY account_id) h
    ON h.account_id = a.id
WHERE a.held_cents <> COALESCE(h.cents, 0)
ORDER BY a.id

-- name: Settle
-- Adds to each account's settled sum its movements from the last run's
-- snapshot xmin $1 (NULL: from the first, and those from before 0024)
-- up to this run's $2: no transaction below $2 can commit a movement any
-- more, so each is summed exactly once, here.
INSERT INTO reconcile_settled (account_id, settled_cents)
SELECT account_id, sum(amount_cents) FROM account_movements
WHERE ($1::xid8 IS NULL OR xact_id >= $1) AND (xact_id IS NULL OR xact_id < $2)
GROUP BY account_id
ON CONFLICT (account_id) DO UPDATE SET settled_cents = reconcile_settled.settled_cents + EXCLUDED.settled_cents

-- name: DoneWithoutCredit
-- Inbox rows done with no pix_credits row (I3): those done at or after $1
-- (done_from; NULL: every done row), and those the last run found ($2),
-- checked again. A row is made done with its processed_at read from the
-- clock after its transaction's first write (Credit, MarkCreditedBefore),
-- or with its credit in the same statement (Receive: a redelivery racing
-- the retention); done_from is chosen so that no row done out of the last
-- run's sight is older (Advance). Each row's credit is looked up by its
-- key.
SELECT d.end_to_end_id FROM (
    SELECT end_to_end_id FROM inbox_messages WHERE status = 'done' AND ($1::timestamptz IS NULL OR processed_at >= $1)
    UNION
    SELECT end_to_end_id FROM inbox_messages WHERE status = 'done' AND end_to_end_id = ANY ($2::text[])) d
WHERE (SELECT count(*) FROM pix_credits c WHERE c.end_to_end_id = d.end_to_end_id) = 0
ORDER BY 1

-- name: OverCredit
-- PIX whose devoluções (all but the reversed) and active holds sum to more
-- than their credit (I9, I11): the PIX of the devoluções written from $1
-- on (NULL: all), those with an active hold, and those the last run found
-- ($2). A devolução's amount never changes and one is never deleted
-- (0024's trigger), and a status only moves to reversed, which lowers the
-- sum: a PIX goes over its credit only by a new devolução or by an active
-- hold (read whole every run, through the partial index of the active
-- holds: the live edge). Each PIX's devoluções and holds come from their
-- PIX's indexes, its credit by its key.
SELECT p.end_to_end_id FROM unnest(ARRAY(
    SELECT end_to_end_id FROM pix_refunds WHERE $1::xid8 IS NULL OR xact_id >= $1
    UNION
    SELECT end_to_end_id FROM pix_holds WHERE status = 'active' AND end_to_end_id IS NOT NULL
    UNION
    SELECT unnest($2::text[]))) AS p(end_to_end_id)
WHERE (SELECT COALESCE(sum(r.amount_cents), 0) FROM pix_refunds r WHERE r.end_to_end_id = p.end_to_end_id AND r.status <> 'reversed')
    + (SELECT COALESCE(sum(h.amount_cents), 0) FROM pix_holds h WHERE h.end_to_end_id = p.end_to_end_id AND h.status = 'active')
    > (SELECT c.amount_cents FROM pix_credits c WHERE c.end_to_end_id = p.end_to_end_id)
ORDER BY 1

-- name: Advance
-- Moves the checkpoint: settled up to this run's snapshot xmin $1, and the
-- differences found ($3, $4) to check again. done_from becomes the start
-- of the latest run whose transaction id is below $1: every transaction
-- this run did not see got its id after that run's, so after that run
-- began, and made its rows done after that (DoneWithoutCredit). Until two
-- runs have passed there is none, and the next run reads every done row.
-- This run is recorded ($2 its start); the runs before the one chosen are
-- no longer needed.
WITH bound AS (SELECT max(started_at) AS at FROM reconcile_runs WHERE xact < $1),
pruned AS (DELETE FROM reconcile_runs WHERE xact < $1 AND started_at < (SELECT at FROM bound)),
run AS (INSERT INTO reconcile_runs (xact, started_at) VALUES (pg_current_xact_id(), $2))
UPDATE reconcile_checkpoint SET settled_before = $1, done_from = COALESCE((SELECT at FROM bound), done_from),
    done_without_credit = $3, refunds_over_credit = $4, checked_at = $2
