-- +goose Up
-- The operators' list of MED's reports (GET /pix/med/reports, pixctl med
-- list): every report, oldest first, a page at a time after the last
-- row's (created_at, id). pix_med_reports is MED's own small table,
-- written at each step of a report, never on a PIX's path: built in the
-- file's one transaction.
CREATE INDEX pix_med_reports_list_idx ON pix_med_reports (created_at, id);
