-- +goose Up
-- The close of a refund request kept on its own because its report ended
-- without returning it (pix_med_refund_requests, why report_disagreed or
-- report_cancelled; saga/med, keptclose.go; docs/med.md, "Refund requests
-- kept on their own, closed REJECTED"): the report's run, as it ends,
-- closes it REJECTED at the DICT (RefundRejectionReason OTHER). Written as
-- the report's other DICT writes are:
--   close_sent_at: marked before the close is sent: whoever finds it (a
--     retry after a lost answer, whatever the attempt) reads the request
--     back before it sends it again;
--   closed_at, close_result, rejection_reason: our close, recorded once
--     the DICT answered it (or it was read back CLOSED as we closed it);
--   close_problem: why it could not be closed (the code only, never the
--     DICT's text: dict_refused, dict_unverified, dict_not_as_ours,
--     dict_invalid_status); the request, OPEN at the DICT, keeps paging
--     (PixMEDRefundRequestNotTaken) for on-call.
-- Added columns, all NULL, no default: no rewrite. The MED saga's own
-- small table: the file's one transaction.
ALTER TABLE pix_med_refund_requests
    ADD COLUMN close_sent_at timestamptz,
    ADD COLUMN closed_at timestamptz,
    ADD COLUMN close_result text CHECK (close_result IN ('REJECTED')),
    ADD COLUMN rejection_reason text CHECK (rejection_reason IN ('NO_BALANCE', 'ACCOUNT_CLOSURE', 'CANNOT_REFUND', 'OTHER')),
    ADD COLUMN close_problem text
        CHECK (close_problem IN ('dict_refused', 'dict_unverified', 'dict_not_as_ours', 'dict_invalid_status'));
