-- +goose Up
-- +goose NO TRANSACTION
-- The age of the oldest pending inbox row (OldestPendingAge: the
-- pix_inbox_oldest_pending_age_seconds gauge, read at every scrape of every
-- process, within a 2 s budget) is the minimum received_at of the pending
-- rows. Without this index PostgreSQL reads every pending row to find it,
-- and there are many exactly when the gauge matters (a backlog: Temporal or
-- the workers down); with it, the first entry of the index.
--
-- inbox_messages takes every webhook: a plain CREATE INDEX would hold off
-- its writes for the whole build, so the index is built CONCURRENTLY, which
-- can't run in a transaction (NO TRANSACTION above). A concurrent build that
-- fails (or whose process dies) leaves an INVALID index of this name, which
-- IF NOT EXISTS would keep: the next run drops it first, concurrently too,
-- and builds it again (docs/extending.md, "An index on a busy table").
DROP INDEX CONCURRENTLY IF EXISTS inbox_messages_pending_received_idx;
CREATE INDEX CONCURRENTLY inbox_messages_pending_received_idx ON inbox_messages (received_at) WHERE status = 'pending';
