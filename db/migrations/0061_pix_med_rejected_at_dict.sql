-- +goose Up
-- +goose NO TRANSACTION
-- A MED report whose refund request another than our close rejected at
-- the DICT (saga/med, Store.Finish, closedByTheDICT; docs/med.md, "The
-- saga"), nothing returned, ends with its own cause, rejected_at_dict,
-- told apart from released (the 72 hours, return_until) in the row, the
-- event and pix_med_reports_ended_total (review r21 MED-3); and the DICT's
-- reason of the copy whose REJECTED the report records is kept beside it
-- (refund_request_dict_reason; review r21 LOW-6: a close recorded from a
-- copy REJECTED OTHER kept no reason). The end cause's check was 0034's
-- inline one, named by PostgreSQL: dropped and added again with the new
-- cause (the release before writes none of it; the new one only after
-- pixd migrate ran). A nullable column without a default, its check named
-- as PostgreSQL names an inline one.
--
-- pix_med_reports is read and written on each report's path: the checks
-- are added NOT VALID and validated each in a transaction of its own, each
-- with a lock timeout, as 0058 (a check's validation scans the table under
-- a lock that blocks neither reads nor writes; the file runs again from
-- the start if one fails: every statement can run twice).
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_med_reports DROP CONSTRAINT IF EXISTS pix_med_reports_end_cause_check;
ALTER TABLE pix_med_reports ADD CONSTRAINT pix_med_reports_end_cause_check
    CHECK (end_cause IN ('released', 'returned', 'returned_in_part', 'cancelled', 'rejected_at_dict')) NOT VALID;
ALTER TABLE pix_med_reports ADD COLUMN IF NOT EXISTS refund_request_dict_reason text;
ALTER TABLE pix_med_reports DROP CONSTRAINT IF EXISTS pix_med_reports_refund_request_dict_reason_check;
ALTER TABLE pix_med_reports ADD CONSTRAINT pix_med_reports_refund_request_dict_reason_check
    CHECK (refund_request_dict_reason IN ('NO_BALANCE', 'ACCOUNT_CLOSURE', 'CANNOT_REFUND', 'OTHER')) NOT VALID;
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
ALTER TABLE pix_med_reports VALIDATE CONSTRAINT pix_med_reports_refund_request_dict_reason_check;
COMMIT;
-- +goose StatementEnd
