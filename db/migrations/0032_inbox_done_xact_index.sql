-- +goose Up
-- +goose NO TRANSACTION
-- The done inbox rows by the transaction that made them done (0031's
-- done_xact): each run of the reconciliation reads the ones made done
-- since the last (queries/reconcile.sql, DoneWithoutCredit and New), never
-- the whole inbox. Rows are made done roughly in done_xact order: the index
-- grows at its end. Built CONCURRENTLY (docs/extending.md, "An index on a
-- busy table").
DROP INDEX CONCURRENTLY IF EXISTS inbox_messages_done_xact_idx;
CREATE INDEX CONCURRENTLY inbox_messages_done_xact_idx ON inbox_messages (done_xact) WHERE status = 'done';
