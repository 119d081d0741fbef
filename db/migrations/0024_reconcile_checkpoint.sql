-- +goose Up
-- +goose NO TRANSACTION
-- The reconciliation checked from a checkpoint (db/reconcile.go, queries/
-- reconcile.sql; docs/design.md, "The reconciliation"): each run checks
-- every account's balance and the done inbox rows, as before, but sums only
-- the movements committed since the last run, so that its cost follows the
-- accounts and the new PIX, never the books' whole history.
--
-- xact_id is the transaction that wrote a movement (pg_current_xact_id(),
-- 64 bits: it never wraps): a run takes its snapshot's xmin X, below which
-- every transaction has ended, adds the movements of [last X, X) to each
-- account's settled sum once and for all, and compares the balance with the
-- opening balance + the settled sum + the movements from X on that its
-- snapshot sees. A column without a default, then the default for the rows
-- to come: no table rewrite. NULL is a movement from before this migration,
-- settled by the first run. Its index is 0025-0029.
--
-- The books are append-only, as the settled sums need: a trigger refuses a
-- change of a movement's account, amount or xact_id, and any delete; and
-- of what else a check reads of a movement and trusts once read (a
-- credit's end_to_end_id, I3 and I9; a devolução's end_to_end_id, and its
-- status back from reversed, I9). The database refuses such a change; a
-- run also recounts a rotating slice of the accounts in full, and checks a
-- rotating part of the done inbox rows (db/reconcile.go), which find one
-- made past the trigger (triggers off: session_replication_role =
-- replica, or disabled by the owner).
--
-- Each table in a transaction of its own, with a lock timeout, as 0014:
-- a wait behind a long transaction fails instead of holding up the writes
-- queued behind it, and the file runs again from the start (every
-- statement is IF NOT EXISTS or OR REPLACE).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION refuse_movement_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the books are append-only: % of a movement of % refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation',
              HINT = 'a movement is never changed nor deleted; a correction is a movement of its own (docs/design.md, I2)';
END $$;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_credits ADD COLUMN IF NOT EXISTS xact_id xid8;
ALTER TABLE pix_credits ALTER COLUMN xact_id SET DEFAULT pg_current_xact_id();
DROP TRIGGER IF EXISTS pix_credits_append_only ON pix_credits;
CREATE TRIGGER pix_credits_append_only BEFORE UPDATE OF account_id, amount_cents, xact_id, end_to_end_id ON pix_credits FOR EACH ROW
    WHEN (OLD.account_id IS DISTINCT FROM NEW.account_id OR OLD.amount_cents IS DISTINCT FROM NEW.amount_cents
          OR OLD.xact_id IS DISTINCT FROM NEW.xact_id OR OLD.end_to_end_id IS DISTINCT FROM NEW.end_to_end_id)
    EXECUTE FUNCTION refuse_movement_change();
DROP TRIGGER IF EXISTS pix_credits_no_delete ON pix_credits;
CREATE TRIGGER pix_credits_no_delete BEFORE DELETE OR TRUNCATE ON pix_credits FOR EACH STATEMENT EXECUTE FUNCTION refuse_movement_change();
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_transfers ADD COLUMN IF NOT EXISTS xact_id xid8;
ALTER TABLE pix_transfers ALTER COLUMN xact_id SET DEFAULT pg_current_xact_id();
DROP TRIGGER IF EXISTS pix_transfers_append_only ON pix_transfers;
CREATE TRIGGER pix_transfers_append_only BEFORE UPDATE OF account_id, amount_cents, xact_id ON pix_transfers FOR EACH ROW
    WHEN (OLD.account_id IS DISTINCT FROM NEW.account_id OR OLD.amount_cents IS DISTINCT FROM NEW.amount_cents
          OR OLD.xact_id IS DISTINCT FROM NEW.xact_id)
    EXECUTE FUNCTION refuse_movement_change();
DROP TRIGGER IF EXISTS pix_transfers_no_delete ON pix_transfers;
CREATE TRIGGER pix_transfers_no_delete BEFORE DELETE OR TRUNCATE ON pix_transfers FOR EACH STATEMENT EXECUTE FUNCTION refuse_movement_change();
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_transfer_refunds ADD COLUMN IF NOT EXISTS xact_id xid8;
ALTER TABLE pix_transfer_refunds ALTER COLUMN xact_id SET DEFAULT pg_current_xact_id();
DROP TRIGGER IF EXISTS pix_transfer_refunds_append_only ON pix_transfer_refunds;
CREATE TRIGGER pix_transfer_refunds_append_only BEFORE UPDATE OF account_id, amount_cents, xact_id ON pix_transfer_refunds FOR EACH ROW
    WHEN (OLD.account_id IS DISTINCT FROM NEW.account_id OR OLD.amount_cents IS DISTINCT FROM NEW.amount_cents
          OR OLD.xact_id IS DISTINCT FROM NEW.xact_id)
    EXECUTE FUNCTION refuse_movement_change();
DROP TRIGGER IF EXISTS pix_transfer_refunds_no_delete ON pix_transfer_refunds;
CREATE TRIGGER pix_transfer_refunds_no_delete BEFORE DELETE OR TRUNCATE ON pix_transfer_refunds FOR EACH STATEMENT EXECUTE FUNCTION refuse_movement_change();
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_refunds ADD COLUMN IF NOT EXISTS xact_id xid8;
ALTER TABLE pix_refunds ALTER COLUMN xact_id SET DEFAULT pg_current_xact_id();
DROP TRIGGER IF EXISTS pix_refunds_append_only ON pix_refunds;
-- A devolução's PIX, and its status once reversed (final: its reversal is
-- a movement of its own), as OverCredit trusts them.
CREATE TRIGGER pix_refunds_append_only BEFORE UPDATE OF account_id, amount_cents, xact_id, end_to_end_id, status ON pix_refunds FOR EACH ROW
    WHEN (OLD.account_id IS DISTINCT FROM NEW.account_id OR OLD.amount_cents IS DISTINCT FROM NEW.amount_cents
          OR OLD.xact_id IS DISTINCT FROM NEW.xact_id OR OLD.end_to_end_id IS DISTINCT FROM NEW.end_to_end_id
          OR (OLD.status = 'reversed' AND NEW.status IS DISTINCT FROM 'reversed'))
    EXECUTE FUNCTION refuse_movement_change();
DROP TRIGGER IF EXISTS pix_refunds_no_delete ON pix_refunds;
CREATE TRIGGER pix_refunds_no_delete BEFORE DELETE OR TRUNCATE ON pix_refunds FOR EACH STATEMENT EXECUTE FUNCTION refuse_movement_change();
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_refund_reversals ADD COLUMN IF NOT EXISTS xact_id xid8;
ALTER TABLE pix_refund_reversals ALTER COLUMN xact_id SET DEFAULT pg_current_xact_id();
DROP TRIGGER IF EXISTS pix_refund_reversals_append_only ON pix_refund_reversals;
CREATE TRIGGER pix_refund_reversals_append_only BEFORE UPDATE OF account_id, amount_cents, xact_id ON pix_refund_reversals FOR EACH ROW
    WHEN (OLD.account_id IS DISTINCT FROM NEW.account_id OR OLD.amount_cents IS DISTINCT FROM NEW.amount_cents
          OR OLD.xact_id IS DISTINCT FROM NEW.xact_id)
    EXECUTE FUNCTION refuse_movement_change();
DROP TRIGGER IF EXISTS pix_refund_reversals_no_delete ON pix_refund_reversals;
CREATE TRIGGER pix_refund_reversals_no_delete BEFORE DELETE OR TRUNCATE ON pix_refund_reversals FOR EACH STATEMENT EXECUTE FUNCTION refuse_movement_change();
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
-- The books (0008, 0009) with each movement's transaction. Replacing the
-- view waits for every reader of it (an older build's full recount):
-- bounded, as the tables' blocks.
CREATE OR REPLACE VIEW account_movements (account_id, amount_cents, kind, ref, xact_id) AS
    SELECT account_id, amount_cents, 'pix_credit', end_to_end_id, xact_id FROM pix_credits
    UNION ALL
    SELECT account_id, -amount_cents, 'pix_transfer', id::text, xact_id FROM pix_transfers
    UNION ALL
    SELECT account_id, amount_cents, 'pix_transfer_refund', transfer_id::text, xact_id FROM pix_transfer_refunds
    UNION ALL
    SELECT account_id, -amount_cents, 'pix_refund', id, xact_id FROM pix_refunds
    UNION ALL
    SELECT account_id, amount_cents, 'pix_refund_reversal', refund_id, xact_id FROM pix_refund_reversals;
-- The checkpoint, one row, written only by the reconciliation's run (and
-- reconcile_reset, below):
-- - settled_before: the snapshot xmin X of the last run that moved it
--   (NULL: none yet, or reset): reconcile_settled holds, for each account
--   whose history was counted, its movements below it, and the done inbox
--   rows and devoluções from it on are the new ones;
-- - recount_after: where the rotating recount of the accounts in full
--   stands (the last account recounted in its turn; NULL: from the first);
-- - done_recount_after: where the rotating check of the done inbox rows
--   against their credits stands (NULL: from the first), and
--   done_history_checked: its first round since the first run (or a
--   reset) is over: every done row was checked, those made done before the
--   checks by transaction id (0031) included;
-- - the differences the last run found of the checks that read only what
--   is new, which each run checks again until they are gone.
CREATE TABLE IF NOT EXISTS reconcile_checkpoint (
    id                   boolean PRIMARY KEY DEFAULT true CHECK (id),
    settled_before       xid8,
    recount_after        text,
    done_recount_after   text,
    done_history_checked boolean NOT NULL DEFAULT false,
    done_without_credit  text[] NOT NULL DEFAULT '{}',
    refunds_over_credit  text[] NOT NULL DEFAULT '{}'
);
-- Each account's movements below settled_before, summed: a row for every
-- account whose whole history a run has counted (an account without one is
-- not compared until a run counts it: after this migration, a reset, or
-- for a new account, the next run).
CREATE TABLE IF NOT EXISTS reconcile_settled (
    account_id    text PRIMARY KEY,
    settled_cents bigint NOT NULL
);
-- The two tables are written only by the run's own statements: a
-- statement of any other transaction is refused, a mistaken script's
-- included. The run says it is the run by setting pix.reconcile to its
-- own transaction id (set_config(..., true): for that transaction only),
-- as reconcile_reset does. It is a guard against mistakes, not a lock
-- against the owner (who may set it too, or turn triggers off): what
-- finds a write past it is the rotating recount, which recounts every
-- account in full within a bounded number of runs.
CREATE OR REPLACE FUNCTION reconcile_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('pix.reconcile', true) IS DISTINCT FROM pg_current_xact_id()::text THEN
        RAISE EXCEPTION '% of % refused: written only by the reconciliation''s run', TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'to count the books again from the start: SELECT reconcile_reset() (docs/design.md, "The reconciliation")';
    END IF;
    RETURN NULL;
END $$;
SELECT set_config('pix.reconcile', pg_current_xact_id()::text, true);
INSERT INTO reconcile_checkpoint (id) VALUES (true) ON CONFLICT (id) DO NOTHING;
DROP TRIGGER IF EXISTS reconcile_checkpoint_guard ON reconcile_checkpoint;
CREATE TRIGGER reconcile_checkpoint_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON reconcile_checkpoint
    FOR EACH STATEMENT EXECUTE FUNCTION reconcile_guard();
DROP TRIGGER IF EXISTS reconcile_settled_guard ON reconcile_settled;
CREATE TRIGGER reconcile_settled_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON reconcile_settled
    FOR EACH STATEMENT EXECUTE FUNCTION reconcile_guard();
-- The books counted again from the start, in one transaction, after the
-- runs in progress (their lock): every account's history is counted anew,
-- part by part, by the runs that follow, and the done rows' check starts
-- a first round again. SELECT reconcile_reset();
CREATE OR REPLACE FUNCTION reconcile_reset() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    LOCK TABLE reconcile_checkpoint IN EXCLUSIVE MODE;
    PERFORM set_config('pix.reconcile', pg_current_xact_id()::text, true);
    TRUNCATE reconcile_settled;
    UPDATE reconcile_checkpoint SET settled_before = NULL, recount_after = NULL, done_recount_after = NULL,
        done_history_checked = false;
END $$;
COMMIT;
-- +goose StatementEnd
