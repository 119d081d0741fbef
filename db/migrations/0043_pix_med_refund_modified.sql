-- +goose Up
-- The DICT's modification time of each refund request the MED saga keeps
-- (saga/med, IntakeRefund; docs/med.md, "The saga"): the DICT's notices
-- come again and in any order, and an old copy of a request (OPEN) read
-- after its cancel must not open it again and have its money returned. A
-- request's status moves only on a copy modified later than the one
-- recorded, and never out of CLOSED or CANCELLED. NULL: recorded before
-- this column (its status still never leaves CLOSED or CANCELLED).
-- Nullable columns without defaults on the MED saga's own small tables:
-- the file's one transaction.
ALTER TABLE pix_med_reports ADD COLUMN refund_request_modified_at timestamptz;
ALTER TABLE pix_med_refund_requests ADD COLUMN dict_modified_at timestamptz;
