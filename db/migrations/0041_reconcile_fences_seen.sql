-- +goose Up
-- +goose NO TRANSACTION
-- The fences of the books as the last run saw them (db/reconcile_run.go,
-- queries/reconcile.sql Fences; docs/design.md, "The reconciliation"): a
-- run reads whether every trigger the books' trust stands on is in force
-- (0039), but an owner of the tables can disable one, write past it and
-- enable it again between two runs. Every such change writes the trigger's
-- row of pg_trigger (or its function's of pg_proc) anew, with a new xmin:
-- fences_seen holds a digest of those rows (their xmin, state, definition
-- and function's source) as the last run read them, and a run that reads
-- another says so (fences_down: changed since the last run), once, then
-- keeps the new one. NULL: none read yet (the first run keeps it).
-- A nullable column without a default on the one-row checkpoint, in a
-- transaction with a lock timeout, as 0036.
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE reconcile_checkpoint ADD COLUMN IF NOT EXISTS fences_seen text;
COMMIT;
-- +goose StatementEnd
