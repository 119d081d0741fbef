-- The reconciliation (store.go, run.go, recount.go): the books checked from a checkpoint
-- (migrations 0024, 0031; docs/design.md, "The reconciliation"). One run is
-- one REPEATABLE READ transaction, one run at a time: every check reads the
-- same snapshot, and the checkpoint moves in the same commit. Each check
-- reads what is new since the last run (by its index) and the accounts; the
-- history only in bounded parts: a rotating slice of the accounts recounted
-- in full, and a rotating part of the done inbox rows.

-- name: RepeatableRead
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ

-- name: Lock
-- One run at a time, the runs' writes serialised, before the snapshot: a
-- run that waits here takes its snapshot once the run before it has
-- committed, and starts from that run's checkpoint (no serialization
-- failure). A table lock takes no transaction id; readers of the
-- checkpoint (ACCESS SHARE) don't wait.
LOCK TABLE reconcile_checkpoint IN EXCLUSIVE MODE

-- name: Snapshot
-- The transaction's first query, which takes its snapshot: its xmin X
-- (every transaction below it has ended: committed, and seen, or rolled
-- back), and how many transaction ids it is behind xmax (the oldest
-- running transaction's age: what holds X back). No transaction id is
-- taken.
SELECT pg_snapshot_xmin(s), pg_snapshot_xmax(s)::text::bigint - pg_snapshot_xmin(s)::text::bigint
FROM pg_current_snapshot() AS s

-- name: Checkpoint
-- The checkpoint (runs are serialised by Lock: no FOR UPDATE, which would
-- take a transaction id, a write, at every run), and the run's time by the
-- database's clock, which times the rotating recount's rounds (0036).
SELECT settled_before, recount_after, done_recount_after, done_history_checked, done_without_credit, refunds_over_credit,
    recount_round_began, recount_last_round, recount_again, fences_seen, now()
FROM reconcile_checkpoint

-- name: Guard
-- Says that this transaction is the run (0024's reconcile_guard lets the
-- run's writes to the checkpoint and the settled sums through): taken only
-- by a run that has something to write.
SELECT set_config('pix.reconcile', pg_current_xact_id()::text, true)

-- name: Unbalanced
-- The accounts whose history is counted (a reconcile_settled row) and whose
-- balance is not their opening balance plus their movements (the view
-- account_movements, to which every saga that moves money adds its tables;
-- invariant I2): the settled sum of those below the last run's snapshot
-- xmin $1, plus those from $1 on that this snapshot sees; and (uncounted
-- true) the accounts whose history is not counted yet, which are not
-- compared (NULL $1: no sum yet, every account). Every account is read;
-- only the new movements, each table's through its xact_id index.
SELECT a.id, s.account_id IS NULL AS uncounted FROM accounts a
LEFT JOIN reconcile_settled s ON s.account_id = a.id
LEFT JOIN (SELECT account_id, sum(amount_cents) AS cents FROM account_movements
           WHERE xact_id >= $1 GROUP BY account_id) n ON n.account_id = a.id
WHERE s.account_id IS NULL OR a.balance_cents <> a.opening_balance_cents + s.settled_cents + COALESCE(n.cents, 0)
ORDER BY a.id

-- name: UnbalancedHolds
-- The accounts whose held amount is not the sum of their active holds
-- (I11). Holds are not movements: held changes with the holds, under the
-- account's lock, in the transaction that starts, fills or ends one, so this
-- snapshot sees both as they are and every run compares them whole. Every
-- account is compared; the active holds come from their partial index,
-- the live edge of the holds.
SELECT a.id FROM accounts a
LEFT JOIN (SELECT account_id, sum(amount_cents) AS cents FROM pix_holds WHERE status = 'active' GROUP BY account_id) h
    ON h.account_id = a.id
WHERE a.held_cents <> COALESCE(h.cents, 0)
ORDER BY a.id

-- name: New
-- What is new since the last run's snapshot xmin $1: how many movements
-- this snapshot reads live (from $1 on: the gauge of how far behind the
-- checkpoint is), and whether any movement or done row was written below
-- this run's xmin $2 (then the checkpoint moves to $2; else nothing can be
-- settled, and the run writes nothing for it). Through the xact_id and
-- done_xact indexes.
SELECT (SELECT count(*) FROM account_movements WHERE xact_id >= $1),
       EXISTS (SELECT 1 FROM account_movements WHERE xact_id >= $1 AND xact_id < $2)
       OR EXISTS (SELECT 1 FROM inbox_messages WHERE status = 'done' AND done_xact >= $1 AND done_xact < $2)

-- name: Settle
-- Adds to each counted account's settled sum its movements from the last
-- run's snapshot xmin $1 up to this run's $2: no transaction below $2 can
-- commit a movement any more, so each is summed exactly once, here. An
-- account whose history is not counted yet gets its sum when it is
-- (SetSettled).
UPDATE reconcile_settled s SET settled_cents = s.settled_cents + n.cents
FROM (SELECT account_id, sum(amount_cents) AS cents FROM account_movements
      WHERE xact_id >= $1 AND xact_id < $2 GROUP BY account_id) n
WHERE s.account_id = n.account_id

-- name: Accounts
-- The accounts after $1 (NULL: from the first) up to $2 (NULL: to the
-- last), in id order, at most $3: the rotating recount's next slice, by
-- the primary key.
SELECT id FROM accounts WHERE id > COALESCE($1, '') AND ($2::text IS NULL OR id <= $2) ORDER BY id LIMIT $3

-- name: AccountsOfPrefix
-- The accounts whose id starts with $1 ('' for all), by the primary key:
-- the load tool's books (Store.UnbalancedAccounts).
SELECT id FROM accounts WHERE starts_with(id, $1) ORDER BY id

-- name: Recount
-- The accounts $1 recounted in full: each one's balance against its
-- opening balance plus every movement it has (I2), each table's through
-- its account index; what it has below the snapshot xmin $2 (its settled
-- sum as it should be once the run settles up to $2; a movement from
-- before 0024, xact_id NULL, is below every xmin), its settled sum as it
-- stands (NULL: not counted yet), what Settle adds to it (from the last
-- run's xmin $3 up to $2), and how many movements were read.
SELECT a.id, a.balance_cents = a.opening_balance_cents + m.total, m.below, s.settled_cents, m.fresh, m.n
FROM accounts a
LEFT JOIN reconcile_settled s ON s.account_id = a.id
CROSS JOIN LATERAL (
    SELECT COALESCE(sum(amount_cents), 0) AS total,
           COALESCE(sum(amount_cents) FILTER (WHERE xact_id IS NULL OR xact_id < $2), 0) AS below,
           COALESCE(sum(amount_cents) FILTER (WHERE xact_id >= $3 AND xact_id < $2), 0) AS fresh,
           count(*) AS n
    FROM account_movements m WHERE m.account_id = a.id) m
WHERE a.id = ANY ($1::text[])
ORDER BY a.id

-- name: SetSettled
-- The settled sums of the accounts recounted whose history was not counted
-- yet ($1 the accounts, $2 their sums below this run's xmin). A sum is
-- never rewritten: one that disagrees with its account's movements is
-- reported (settled_mismatch), and 0039's fence refuses any change of a
-- sum but the run's settling.
INSERT INTO reconcile_settled (account_id, settled_cents)
SELECT * FROM unnest($1::text[], $2::bigint[])
ON CONFLICT (account_id) DO NOTHING

-- name: Fences
-- The fences of the books that are not in force: every trigger the
-- reconciliation's trust stands on, missing, disabled (ALTER TABLE ...
-- DISABLE TRIGGER; tgenabled 'D') or firing on a replica only ('R'), or
-- calling another function than its own. Expected: on every table of the
-- books (the view account_movements, whatever saga added it) its
-- append-only and no-delete triggers (0024); the guards (0024) and fences
-- (0039, 0064) of the settled sums and the checkpoint; the stamp of the
-- done rows' transaction (0031); the accounts' fixed opening balance
-- (0044). And a digest of their rows of pg_trigger and of their
-- functions' of pg_proc (xmin, state, definition, source): any write of
-- one since the last run (disabled and enabled again, replaced) changes
-- it (0041). The list and the digest are the database's (0064's
-- reconcile_fences), which refuses to keep another digest than its own.
-- One read of the catalog, a few dozen rows.
SELECT down, seen FROM reconcile_fences()

-- name: History
-- The books' size, as the planner's statistics estimate it (pg_class's
-- reltuples, kept by autovacuum and ANALYZE; -1 before either: none): the
-- movements of every table of the books and the accounts, for the round
-- the rotating recount needs at its budget. Read from the catalog: a count
-- of the history would read it whole.
SELECT COALESCE(sum(greatest(c.reltuples, 0)) FILTER (WHERE c.oid <> to_regclass('accounts')), 0)::bigint,
       COALESCE(sum(greatest(c.reltuples, 0)) FILTER (WHERE c.oid = to_regclass('accounts')), 0)::bigint
FROM pg_class c
WHERE c.oid = to_regclass('accounts') OR c.oid IN (
    SELECT d.refobjid FROM pg_rewrite r
    JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass
    WHERE r.ev_class = to_regclass('account_movements') AND d.refobjid <> r.ev_class)

-- name: DoneWithoutCredit
-- Inbox rows done with no pix_credits row (I3): those made done from the
-- last run's snapshot xmin $1 on (0031's done_xact, stamped by a trigger
-- whatever statement makes a row done; NULL $1: none, the first run, whose
-- pass over the history reads them), and those found before ($2), checked
-- again. Each row's credit is looked up by its key.
SELECT d.end_to_end_id FROM (
    SELECT end_to_end_id FROM inbox_messages WHERE status = 'done' AND done_xact >= $1
    UNION
    SELECT end_to_end_id FROM inbox_messages WHERE status = 'done' AND end_to_end_id = ANY ($2::text[])) d
WHERE (SELECT count(*) FROM pix_credits c WHERE c.end_to_end_id = d.end_to_end_id) = 0
ORDER BY 1

-- name: DoneRecount
-- A part of the rotating check of every done inbox row against its credit
-- (I3), whenever it was made done: up to $2 of them after $1 (NULL: from
-- the first), in end_to_end_id order, through the primary key. How many
-- were read, the last one, and those with no credit. Its first round
-- after 0024 (or a reset) checks the rows made done before the checks by
-- transaction id (0031); every round after, a row changed past 0031's
-- trigger.
WITH part AS (
    SELECT end_to_end_id FROM inbox_messages WHERE end_to_end_id > COALESCE($1, '') AND status = 'done'
    ORDER BY end_to_end_id LIMIT $2)
SELECT (SELECT count(*) FROM part), (SELECT max(end_to_end_id) FROM part),
       ARRAY(SELECT p.end_to_end_id FROM part p
             WHERE (SELECT count(*) FROM pix_credits c WHERE c.end_to_end_id = p.end_to_end_id) = 0 ORDER BY 1)

-- name: OverCredit
-- PIX whose devoluções (all but the reversed) and active holds (a hold
-- that fills from later credits by what it fills to: TakenCents) sum to
-- more than their credit (I9, I11): the PIX of the devoluções written from the
-- last run's snapshot xmin $1 on (NULL: none, the first run), those of the
-- devoluções of the accounts recounted in full ($3), those with an active
-- hold, and those the last run found ($2). A devolução's amount and PIX
-- never change, one is never deleted, and its status never comes back from
-- reversed (0024's trigger); a status only moves to reversed, which lowers
-- the sum: a PIX goes over its credit only by a new devolução or by an
-- active hold (read whole every run, through the partial index of the
-- active holds: the live edge). Each PIX's devoluções and holds come from
-- their PIX's indexes, its credit by its key.
SELECT p.end_to_end_id FROM unnest(ARRAY(
    SELECT end_to_end_id FROM pix_refunds WHERE xact_id >= $1
    UNION
    SELECT end_to_end_id FROM pix_refunds WHERE account_id = ANY ($3::text[])
    UNION
    SELECT end_to_end_id FROM pix_holds WHERE status = 'active' AND end_to_end_id IS NOT NULL
    UNION
    SELECT unnest($2::text[]))) AS p(end_to_end_id)
WHERE (SELECT COALESCE(sum(r.amount_cents), 0) FROM pix_refunds r WHERE r.end_to_end_id = p.end_to_end_id AND r.status <> 'reversed')
    + (SELECT COALESCE(sum(COALESCE(h.fill_to_cents, h.amount_cents)), 0) FROM pix_holds h
       WHERE h.end_to_end_id = p.end_to_end_id AND h.status = 'active')
    > (SELECT c.amount_cents FROM pix_credits c WHERE c.end_to_end_id = p.end_to_end_id)
ORDER BY 1

-- name: Advance
-- Moves the checkpoint (written only when a value changed): settled up to
-- $1, the rotating recounts of the accounts at $2 and of the done rows at
-- $3 ($4: its first round is over), the differences found ($5, $6) to
-- check again, and the accounts' rotation's round: when the one under way
-- began ($7) and how long the last one took ($8), and the accounts found
-- wrong, which the next run recounts in full first ($9, 0039), and the
-- digest of the fences it read ($10, 0041).
UPDATE reconcile_checkpoint SET settled_before = $1, recount_after = $2, done_recount_after = $3,
    done_history_checked = $4, done_without_credit = $5, refunds_over_credit = $6,
    recount_round_began = $7, recount_last_round = $8, recount_again = $9, fences_seen = $10
