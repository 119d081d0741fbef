-- +goose Up
-- MED's writes to the DICT marked before they are sent (saga/med; docs/med.md,
-- "The DICT"): an acknowledge, a close of the report, a close of its refund
-- request. A write whose mark is set may have been done, whatever the run
-- or the attempt that finds it (a worker stopped, a new run): it is read
-- back at the DICT before it is sent again. pix_med_reports is the MED
-- saga's own, small, and written only by it: columns without a default
-- (no rewrite), in the file's one transaction.
ALTER TABLE pix_med_reports ADD COLUMN acknowledge_sent_at timestamptz;
ALTER TABLE pix_med_reports ADD COLUMN close_sent_at timestamptz;
ALTER TABLE pix_med_reports ADD COLUMN refund_close_sent_at timestamptz;
