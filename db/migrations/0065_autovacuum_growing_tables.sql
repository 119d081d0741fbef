-- +goose Up
-- +goose NO TRANSACTION
-- The tables that grow with every PIX are vacuumed and analysed after a
-- number of rows, not a fraction of the table (issue 35; the measurement
-- and the arithmetic are in docs/benchmarks.md, "Autovacuum of the growing
-- tables"). With the server's defaults (a fifth of the table) a
-- 100-million-row inbox collects 20 million dead rows, and each table 20
-- million inserts not yet in the visibility map, between two autovacuums:
-- hours apart at 1,000 PIX/s, each then a vacuum of minutes and gigabytes
-- of WAL. With these, autovacuum comes every minute or so (its naptime),
-- each run a minute's writes, whatever the table's size; the price is
-- more index passes (one each time 2% of a table's pages hold dead
-- items, against one per fifth of the table), each reading the table's
-- indexes whole:
--   - inbox_messages, outbox_events, idempotency_keys: updated or deleted
--     row by row (dispatched, done, published, answered, the retention),
--     so 5,000 dead rows; 50,000 inserts (the visibility map, the freeze);
--   - pix_credits: insert-only (I1: never updated nor deleted, its trigger
--     refuses it), so only the inserts;
--   - all four analysed every 50,000 changed rows, so that a day's rows
--     (the claims', the retention's and the catch-up's ranges) are in the
--     statistics within a minute, not after a fifth of the table.
-- Storage parameters only: ALTER TABLE ... SET takes a SHARE UPDATE
-- EXCLUSIVE lock, which blocks neither reads nor writes (only another
-- vacuum, which it cancels if autovacuum's), and rewrites nothing. A lock
-- timeout all the same, and the file runs again from the start if it fails.
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE inbox_messages SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 50000,
    autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 50000);
ALTER TABLE outbox_events SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 50000,
    autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 50000);
ALTER TABLE idempotency_keys SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 50000,
    autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 50000);
ALTER TABLE pix_credits SET (autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 50000,
    autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 50000);
COMMIT;
-- +goose StatementEnd
