-- +goose Up
-- +goose NO TRANSACTION
-- The movements of pix_refunds by the transaction that wrote them (0024's
-- xact_id): each run of the reconciliation reads the ones committed since
-- the last (queries/reconcile.sql, Unbalanced and Settle), never the whole
-- table. Rows come in roughly in xact_id order: the index grows at its end.
-- Built CONCURRENTLY (docs/extending.md, "An index on a busy table").
DROP INDEX CONCURRENTLY IF EXISTS pix_refunds_xact_idx;
CREATE INDEX CONCURRENTLY pix_refunds_xact_idx ON pix_refunds (xact_id);
