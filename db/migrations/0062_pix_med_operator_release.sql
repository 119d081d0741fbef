-- +goose Up
-- +goose NO TRANSACTION
-- An operator's release of a MED report (saga/med, Store.ReleaseKeyed;
-- docs/med.md, "Stopped at the DICT"): a report whose run stopped at the
-- DICT (dict_problem) while its refund request is already closed or
-- cancelled at the DICT (our copy of it) is ended by an operator, POST
-- /pix/med/reports/{id}/release, what it still holds released once: the
-- end cause operator_released, who released it and why (the operator's
-- details, required, at most 2,000 characters) kept on the row. Nullable
-- columns without a default, their checks named as PostgreSQL names
-- inline ones, and the end cause's check replaced.
--
-- pix_med_reports is read and written on each report's path: the checks
-- are added NOT VALID and validated each in a transaction of its own, each
-- with a lock timeout, as 0061 (a check's validation scans the table under
-- a lock that blocks neither reads nor writes; the file runs again from
-- the start if one fails: every statement can run twice).
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_med_reports DROP CONSTRAINT IF EXISTS pix_med_reports_end_cause_check;
ALTER TABLE pix_med_reports ADD CONSTRAINT pix_med_reports_end_cause_check
    CHECK (end_cause IN ('released', 'returned', 'returned_in_part', 'cancelled', 'rejected_at_dict', 'operator_released')) NOT VALID;
ALTER TABLE pix_med_reports ADD COLUMN IF NOT EXISTS released_by text;
ALTER TABLE pix_med_reports DROP CONSTRAINT IF EXISTS pix_med_reports_released_by_check;
ALTER TABLE pix_med_reports ADD CONSTRAINT pix_med_reports_released_by_check
    CHECK (char_length(released_by) BETWEEN 1 AND 200) NOT VALID;
ALTER TABLE pix_med_reports ADD COLUMN IF NOT EXISTS release_details text;
ALTER TABLE pix_med_reports DROP CONSTRAINT IF EXISTS pix_med_reports_release_details_check;
ALTER TABLE pix_med_reports ADD CONSTRAINT pix_med_reports_release_details_check
    CHECK (char_length(release_details) BETWEEN 1 AND 2000) NOT VALID;
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_med_reports VALIDATE CONSTRAINT pix_med_reports_end_cause_check;
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_med_reports VALIDATE CONSTRAINT pix_med_reports_released_by_check;
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_med_reports VALIDATE CONSTRAINT pix_med_reports_release_details_check;
COMMIT;
-- +goose StatementEnd
