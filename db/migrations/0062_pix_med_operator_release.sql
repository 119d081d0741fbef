-- +goose Up
-- An operator's release of a MED report (saga/med, Store.ReleaseKeyed;
-- docs/med.md, "Stopped at the DICT"): a report whose run stopped at the
-- DICT (dict_problem) while its refund request is already closed or
-- cancelled at the DICT (our copy of it) is ended by an operator, POST
-- /pix/med/reports/{id}/release, what it still holds released once: the
-- end cause operator_released, who released it and why (the operator's
-- details, required, at most 2,000 characters) kept on the row. Nullable
-- columns without a default, and the end cause's check replaced, on the
-- MED saga's own small table: the file's one transaction.
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_med_reports DROP CONSTRAINT pix_med_reports_end_cause_check;
ALTER TABLE pix_med_reports ADD CONSTRAINT pix_med_reports_end_cause_check
    CHECK (end_cause IN ('released', 'returned', 'returned_in_part', 'cancelled', 'rejected_at_dict', 'operator_released'));
ALTER TABLE pix_med_reports ADD COLUMN released_by text CHECK (char_length(released_by) BETWEEN 1 AND 200);
ALTER TABLE pix_med_reports ADD COLUMN release_details text CHECK (char_length(release_details) BETWEEN 1 AND 2000);
