-- +goose Up
-- +goose NO TRANSACTION
-- The list of every failed PIX (GET /admin/pix/credits?status=failed
-- without account_id, pixctl failed), newest first, is paged by keyset on
-- (processed_at, end_to_end_id) (FailedCredits): without this index
-- PostgreSQL sorts every failed row for each page, and there are many
-- exactly when an operator lists them (a PSP's key or an account missing
-- for hours); with it, each page is a scan of its own rows. An account's
-- list has inbox_messages_failed_idx (0001).
--
-- inbox_messages takes every webhook: the index is built CONCURRENTLY,
-- outside a transaction, and a build that failed (an INVALID index of this
-- name) is dropped first and built again (docs/extending.md, "An index on a
-- busy table").
DROP INDEX CONCURRENTLY IF EXISTS inbox_messages_failed_order_idx;
CREATE INDEX CONCURRENTLY inbox_messages_failed_order_idx ON inbox_messages (processed_at, end_to_end_id) WHERE status = 'failed';
