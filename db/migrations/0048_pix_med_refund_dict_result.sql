-- +goose Up
-- The analysis result the DICT's notice of a refund request carries
-- (saga/med, IntakeRefund; docs/med.md, "A bank behind a PSP"): a bank
-- behind a PSP (MED_DICT_DISABLED=true) closes a request it rejects (no
-- devolução for the PSP to answer it from) through the PSP's own channel;
-- the PSP's notice CLOSED REJECTED is that close, recorded as ours, and a
-- notice CLOSED with another result stops the run (an operator's). NULL:
-- no notice said one. A nullable column without a default on the MED
-- saga's own small table: the file's one transaction.
ALTER TABLE pix_med_reports ADD COLUMN refund_request_dict_result text
    CHECK (refund_request_dict_result IN ('TOTALLY_ACCEPTED', 'PARTIALLY_ACCEPTED', 'REJECTED'));
