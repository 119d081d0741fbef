-- +goose Up
-- MED after its attack review (saga/med; docs/med.md, "The saga"):
--
-- return_refused: the devolução of a report refused for good (the PIX's
-- 90-day devolução window closed, the account closed): a business outcome,
-- visible, the refund request closed at the DICT and the report ended,
-- never a run failed and started again.
--
-- pix_med_refund_requests: a refund request the saga does not answer on
-- its report, keyed by its own id, its amount its own (never written over
-- the request the report answers, whose returns it would mix): one that
-- came after its report ended and whose money can no longer be returned,
-- or a second request of a report that answered one already. On-call's:
-- counted while OPEN at the DICT (pix_med_refund_requests_unanswered,
-- PixMEDRefundRequestUnanswered). Both tables are the MED saga's own,
-- small, and written only by it: the file's one transaction.
ALTER TABLE pix_med_reports ADD COLUMN return_refused text
    CHECK (return_refused IN ('refund_window_closed', 'account_closed'));

CREATE TABLE pix_med_refund_requests (
    id            uuid        PRIMARY KEY,
    report_id     uuid        NOT NULL REFERENCES pix_med_reports (id),
    amount_cents  bigint      NOT NULL CHECK (amount_cents > 0),
    dict_status   text        NOT NULL CHECK (dict_status IN ('OPEN', 'CLOSED', 'CANCELLED')),
    -- Why the saga does not answer it: its report had ended (report_ended),
    -- answers another request (another_request), or took another in its
    -- place after its requester cancelled it, nothing returned (replaced).
    why           text        NOT NULL CHECK (why IN ('report_ended', 'another_request', 'replaced')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX pix_med_refund_requests_open_idx ON pix_med_refund_requests (report_id) WHERE dict_status = 'OPEN';
