-- +goose Up
-- +goose NO TRANSACTION
-- A hold that fills may stop filling at an instant (db.NewHold.FillUntil;
-- issue 37): fill_until, by the database's clock. From that instant on
-- (the statement's start: statement_timestamp(), after the account's lock
-- the inflow waited for), an inflow fills it no more, in the inflow's own
-- transaction (queries/holds.sql Fill), and it no longer counts as an
-- older hold still lacking (AccountFilling). A MED's hold fills until its
-- report's return_until (saga/med): a credit a minute past it is the
-- customer's, not held until the report's next transaction fenced it.
-- NULL: no such instant (a hold that does not fill; one made before this
-- migration, or by an older build while the release rolls out: saga/med
-- sets a MED's own, db.SetFillUntil).
--
-- A nullable column without a default: no rewrite, and an older build
-- (which names its columns, holdColumns, and leaves this one NULL)
-- reads and writes the table as before. No backfill here: the saga sets
-- the holds of its open reports in their next transaction (docs/med.md,
-- "The hold"), which also covers the holds an older build makes after
-- this migration ran. The index pix_holds_filling_idx is unchanged: the
-- fence is a filter on the rows it finds (an instant is not a partial
-- index's immutable predicate). pix_holds is written by every hold and
-- read by every credit: a lock timeout, and the file runs again from the
-- start if it fails.
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_holds ADD COLUMN IF NOT EXISTS fill_until timestamptz;
COMMIT;
-- +goose StatementEnd
