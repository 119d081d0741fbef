-- +goose Up
-- The MED runs stopped at the DICT on a quarantined item (saga/med:
-- docs/med.md, "The DICT's lister"): a refund request read back that the
-- doors refuse for good, or one the expiry's own listing met malformed.
-- A row per report: the quarantine row (kind, dict_id, dict_modified_at)
-- its dict_problem names, and the report's generation once that problem
-- was noted. A clear of that quarantine row (the lister taking the item
-- in, or an operator's) bumps the report's generation in the clear's
-- transaction, when the report is still at gen (nothing else moved it),
-- and its run is signalled after the commit: the run tries its step again
-- at once rather than at its retry time. Only the copy named: a clear of
-- an older copy never wakes a run stopped on a newer one. The index is
-- the clear's lookup. A new table: the file's one transaction.
CREATE TABLE pix_med_quarantine_stops (
    report_id        uuid PRIMARY KEY REFERENCES pix_med_reports (id) ON DELETE CASCADE,
    kind             text NOT NULL CHECK (kind IN ('report', 'refund')),
    dict_id          text NOT NULL CHECK (length(dict_id) <= 64),
    dict_modified_at timestamptz NOT NULL,
    gen              bigint NOT NULL
);
CREATE INDEX pix_med_quarantine_stops_item_idx ON pix_med_quarantine_stops (kind, dict_id, dict_modified_at);
