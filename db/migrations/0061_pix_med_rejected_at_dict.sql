-- +goose Up
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
-- pixd migrate ran). A nullable column without a default. The MED saga's
-- own small table: the file's one transaction.
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_med_reports DROP CONSTRAINT pix_med_reports_end_cause_check;
ALTER TABLE pix_med_reports ADD CONSTRAINT pix_med_reports_end_cause_check
    CHECK (end_cause IN ('released', 'returned', 'returned_in_part', 'cancelled', 'rejected_at_dict'));
ALTER TABLE pix_med_reports ADD COLUMN refund_request_dict_reason text
    CHECK (refund_request_dict_reason IN ('NO_BALANCE', 'ACCOUNT_CLOSURE', 'CANNOT_REFUND', 'OTHER'));
