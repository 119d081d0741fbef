-- +goose Up
-- +goose NO TRANSACTION
-- The settled sums fenced by the database (db/reconcile_run.go; docs/
-- design.md, "The reconciliation"): a run trusts each account's settled sum
-- (reconcile_settled, 0024) as its movements below the checkpoint, and
-- checks only what is new against it, so the sums are what the books'
-- guarantee stands on. 0024's guard lets only a transaction that says it is
-- the run write them; said is not proved, and the run itself used to write
-- over a sum that disagreed with its account's recount. From here a settled
-- sum only advances with its checkpoint:
-- - an UPDATE of settled sums is refused unless it is the run's settling,
--   once per run: in a REPEATABLE READ transaction whose snapshot xmin X is
--   past the checkpoint's settled_before, each sum changed by exactly its
--   account's movements of [settled_before, X) (one pass over them through
--   the xact_id indexes, 0025-0029: the cost of the run's own Settle), and
--   not twice in the transaction. A sum is never rewritten otherwise: a
--   sum that disagrees with its account's movements is reported by the
--   run (settled_mismatch), never put right in place; reconcile_reset()
--   counts everything again;
-- - a DELETE of a settled sum is refused (the reset TRUNCATEs, through
--   0024's guard);
-- - the checkpoint's settled_before never moves back, nor past the writing
--   transaction's snapshot xmin (a sum settled up to a point no run could
--   have reached).
-- What a run finds wrong of an account (unbalanced, or its settled sum not
-- its movements) it keeps in the checkpoint's recount_again, and the next
-- run recounts those accounts in full first: found again at every run
-- until mended, as the done rows and devoluções found are (a sum no longer
-- put right no longer flags its account by itself).
--
-- An owner of the tables can still turn a trigger off or replace its
-- function: each run checks that every fence of the books is there and in
-- force (queries/reconcile.sql, Fences) and says which is not
-- (pix_reconcile_fences_down, PixReconcileFenceDown).
--
-- reconcile_settled and reconcile_checkpoint are written by the run alone,
-- every RECONCILE_INTERVAL, and hold a row per account and one row: the
-- triggers are created in one short transaction with a lock timeout, as
-- 0014 (a run holds the checkpoint's lock for its seconds).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION reconcile_settled_fence() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    x          xid8 := pg_snapshot_xmin(pg_current_snapshot());
    checkpoint xid8;
    wrong      text;
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'DELETE of reconcile_settled refused: a settled sum only advances with its checkpoint'
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'to count the books again from the start: SELECT reconcile_reset() (docs/design.md, "The reconciliation")';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM new_sums) THEN
        RETURN NULL; -- a statement that changed no sum
    END IF;
    SELECT settled_before INTO checkpoint FROM reconcile_checkpoint;
    IF current_setting('transaction_isolation') <> 'repeatable read' OR checkpoint IS NULL OR checkpoint >= x
       OR current_setting('pix.reconcile_settled', true) IS NOT DISTINCT FROM x::text THEN
        RAISE EXCEPTION 'UPDATE of reconcile_settled refused: a settled sum only advances with its checkpoint, once a run'
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'settled by the reconciliation''s run alone, from the checkpoint to its snapshot xmin (docs/design.md, "The reconciliation")';
    END IF;
    PERFORM set_config('pix.reconcile_settled', x::text, true);
    SELECT COALESCE(o.account_id, n.account_id) INTO wrong
    FROM old_sums o
    FULL JOIN new_sums n ON n.account_id = o.account_id
    LEFT JOIN (SELECT account_id, sum(amount_cents) AS cents FROM account_movements
               WHERE xact_id >= checkpoint AND xact_id < x GROUP BY account_id) m ON m.account_id = o.account_id
    WHERE o.account_id IS NULL OR n.account_id IS NULL
       OR n.settled_cents - o.settled_cents IS DISTINCT FROM COALESCE(m.cents, 0)
    LIMIT 1;
    IF wrong IS NOT NULL THEN
        RAISE EXCEPTION 'UPDATE of reconcile_settled refused: the settled sum of % would not be its movements''', wrong
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'a settled sum only advances by its account''s movements from the checkpoint to the run''s snapshot xmin';
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION reconcile_checkpoint_fence() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'UPDATE of reconcile_checkpoint refused: settled_before moves only forward, never past the snapshot xmin'
        USING ERRCODE = 'integrity_constraint_violation',
              HINT = 'to count the books again from the start: SELECT reconcile_reset() (docs/design.md, "The reconciliation")';
END $$;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE reconcile_checkpoint ADD COLUMN IF NOT EXISTS recount_again text[] NOT NULL DEFAULT '{}';
DROP TRIGGER IF EXISTS reconcile_settled_fence ON reconcile_settled;
CREATE TRIGGER reconcile_settled_fence AFTER UPDATE ON reconcile_settled
    REFERENCING OLD TABLE AS old_sums NEW TABLE AS new_sums
    FOR EACH STATEMENT EXECUTE FUNCTION reconcile_settled_fence();
DROP TRIGGER IF EXISTS reconcile_settled_no_delete ON reconcile_settled;
CREATE TRIGGER reconcile_settled_no_delete BEFORE DELETE ON reconcile_settled
    FOR EACH STATEMENT EXECUTE FUNCTION reconcile_settled_fence();
DROP TRIGGER IF EXISTS reconcile_checkpoint_fence ON reconcile_checkpoint;
CREATE TRIGGER reconcile_checkpoint_fence BEFORE UPDATE OF settled_before ON reconcile_checkpoint FOR EACH ROW
    WHEN (NEW.settled_before < OLD.settled_before OR NEW.settled_before > pg_snapshot_xmin(pg_current_snapshot()))
    EXECUTE FUNCTION reconcile_checkpoint_fence();
COMMIT;
-- +goose StatementEnd
