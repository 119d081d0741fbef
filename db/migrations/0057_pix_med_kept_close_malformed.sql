-- +goose Up
-- A kept refund request's close may stop at a read-back the client could
-- not read as the specification writes it (issue 37: getRefund's answer
-- checked as the lists' items are, internal/dict decodeAnswer; the saga
-- records dict_malformed, never closes or decides on it): 0054's
-- close_problem takes that code too. The check is dropped and added again
-- with it (the release before writes none of the new code; the new one
-- writes it only after pixd migrate ran). The MED saga's own small table:
-- the file's one transaction, and each statement can run twice.
ALTER TABLE pix_med_refund_requests DROP CONSTRAINT IF EXISTS pix_med_refund_requests_close_problem_check;
ALTER TABLE pix_med_refund_requests ADD CONSTRAINT pix_med_refund_requests_close_problem_check
    CHECK (close_problem IN ('dict_refused', 'dict_unverified', 'dict_not_as_ours', 'dict_invalid_status', 'dict_malformed'));
