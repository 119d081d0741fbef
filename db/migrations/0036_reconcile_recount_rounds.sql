-- +goose Up
-- +goose NO TRANSACTION
-- How long the reconciliation's rotating recount takes to go round every
-- account (db/reconcile_recount.go; docs/operations.md, "The
-- reconciliation's rotation"). Each run recounts accounts in full up to a
-- constant budget of movements (RECONCILE_RECOUNT_MOVEMENTS), so that a
-- run costs the same whatever the books' size; the price is a round that
-- grows with the history: an account changed past the books' guards is
-- found only when its turn comes. The round is timed here, by the
-- database's clock of the runs, so that it can be watched and alerted on
-- (pix_reconcile_recount_round_seconds, PixReconcileRecountSlow):
-- - recount_round_began: when the round under way began (the run that
--   started the rotation again from the first account); NULL: no round
--   spans runs (none yet, or the last run recounted every account);
-- - recount_last_round: how long the last whole round took, from the run
--   that began it to the run that finished it (0: within one run; NULL:
--   none timed yet).
-- Written by the run only when a round begins or ends (I12). Nullable
-- columns without a default (no table rewrite), in a transaction with a
-- lock timeout (a run holds the table's lock for its seconds), as 0014.
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE reconcile_checkpoint ADD COLUMN IF NOT EXISTS recount_round_began timestamptz,
    ADD COLUMN IF NOT EXISTS recount_last_round interval;
COMMIT;
-- +goose StatementEnd
