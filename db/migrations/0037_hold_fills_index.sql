-- +goose Up
-- +goose NO TRANSACTION
-- The inflows' probe (queries/credits.sql Credit, queries/holds.sql
-- Fill): an account's holds still filling (0035's fill_to_cents), in the
-- order they fill (created_at, id). A hold leaves the index when it is
-- full or ends, so the index holds only the holds filling now (a MED
-- waiting for money): for an account without one, the probe is one
-- descent of an almost empty index. pix_holds is written by every hold,
-- release and capture, and from 0035 on read by every credit: built
-- CONCURRENTLY (docs/extending.md, "An index on a busy table").
DROP INDEX CONCURRENTLY IF EXISTS pix_holds_filling_idx;
CREATE INDEX CONCURRENTLY pix_holds_filling_idx ON pix_holds (account_id, created_at, id)
    WHERE status = 'active' AND amount_cents < fill_to_cents;
