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
-- change of a movement's account, amount or xact_id, and any delete. A
-- full recount (what each run did before) would find such a change; now
-- the database refuses it.
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
CREATE TRIGGER pix_credits_append_only BEFORE UPDATE OF account_id, amount_cents, xact_id ON pix_credits FOR EACH ROW
    WHEN (OLD.account_id IS DISTINCT FROM NEW.account_id OR OLD.amount_cents IS DISTINCT FROM NEW.amount_cents
          OR OLD.xact_id IS DISTINCT FROM NEW.xact_id)
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
CREATE TRIGGER pix_refunds_append_only BEFORE UPDATE OF account_id, amount_cents, xact_id ON pix_refunds FOR EACH ROW
    WHEN (OLD.account_id IS DISTINCT FROM NEW.account_id OR OLD.amount_cents IS DISTINCT FROM NEW.amount_cents
          OR OLD.xact_id IS DISTINCT FROM NEW.xact_id)
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
-- The books (0008, 0009) with each movement's transaction.
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
-- The checkpoint, one row, written only by the reconciliation:
-- settled_before is the last run's snapshot xmin (NULL: no run yet, the
-- next one sums every movement); done_from the earliest processed_at a done
-- inbox row the next run has not seen may have (NULL: the next run reads
-- every done row); the differences the last run found of the checks that
-- read only what is new, which each run checks again until they are gone.
CREATE TABLE IF NOT EXISTS reconcile_checkpoint (
    id                  boolean PRIMARY KEY DEFAULT true CHECK (id),
    settled_before      xid8,
    done_from           timestamptz,
    done_without_credit text[] NOT NULL DEFAULT '{}',
    refunds_over_credit text[] NOT NULL DEFAULT '{}',
    checked_at          timestamptz
);
INSERT INTO reconcile_checkpoint (id) VALUES (true) ON CONFLICT (id) DO NOTHING;
-- Each account's movements below settled_before, summed.
CREATE TABLE IF NOT EXISTS reconcile_settled (
    account_id    text PRIMARY KEY,
    settled_cents bigint NOT NULL
);
-- The runs that may still bound done_from: each run's transaction and the
-- time it began (before its transaction id was assigned).
CREATE TABLE IF NOT EXISTS reconcile_runs (
    xact       xid8 PRIMARY KEY,
    started_at timestamptz NOT NULL
);
COMMIT;
-- +goose StatementEnd
