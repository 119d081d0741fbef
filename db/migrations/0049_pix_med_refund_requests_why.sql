-- +goose Up
-- Why a refund request is kept on its own (pix_med_refund_requests, 0040;
-- saga/med; docs/med.md, "The saga"): a request its report had taken
-- before its close (the DICT's notice first) and that was still OPEN when
-- the report ended otherwise than by returning it, DISAGREED
-- (report_disagreed) or cancelled by its reporter (report_cancelled), is
-- kept there, visibly, and pages while OPEN at the DICT
-- (PixMEDRefundRequestNotTaken): it no longer stays behind on an ended
-- report that no run answers. The check was 0040's inline one, named by
-- PostgreSQL. The MED saga's own small table: the file's one transaction.
ALTER TABLE pix_med_refund_requests DROP CONSTRAINT pix_med_refund_requests_why_check;
ALTER TABLE pix_med_refund_requests ADD CONSTRAINT pix_med_refund_requests_why_check
    CHECK (why IN ('report_ended', 'another_request', 'replaced', 'report_disagreed', 'report_cancelled'));
-- The operators' list of them (GET /pix/med/refund-requests), oldest first,
-- a page at a time by (created_at, id).
CREATE INDEX pix_med_refund_requests_created_idx ON pix_med_refund_requests (created_at, id);
