-- +goose Up
-- +goose NO TRANSACTION
-- The done inbox rows checked by transaction id (I3; db/reconcile.go,
-- queries/reconcile.sql, DoneWithoutCredit; docs/design.md, "The
-- reconciliation"), as the movements are (0024): done_xact is the
-- transaction that made the row done (pg_current_xact_id(), the top
-- transaction's, 64 bits). A run reads the done rows from the last run's
-- snapshot xmin on: a row made done by a transaction below it was seen by
-- that run (it had ended), one at or above it is read by this one,
-- whatever clock wrote its processed_at (a wall-clock bound misses a row
-- made done by a server whose clock is behind).
--
-- A trigger stamps it, whatever statement makes the row done (Receive,
-- Credit, MarkCreditedBefore, a script's UPDATE): when a row becomes done,
-- when a done row's end_to_end_id changes, and when anything writes
-- done_xact itself (then it is stamped anew, not taken as written); it is
-- NULL on a row that is not done. Its WHEN clauses are read without
-- calling the function: only those writes call it, once per PIX made done.
-- NULL on a done row is a row made done before this migration, or past the
-- trigger: the run's rotating check of every done row reads those, part by
-- part. A nullable column without a default (no table rewrite), in a
-- transaction with a lock timeout, as 0014; its index is 0032.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION stamp_done_xact() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.done_xact := CASE WHEN NEW.status = 'done' THEN pg_current_xact_id() END;
    RETURN NEW;
END $$;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE inbox_messages ADD COLUMN IF NOT EXISTS done_xact xid8;
DROP TRIGGER IF EXISTS inbox_messages_done_xact_insert ON inbox_messages;
CREATE TRIGGER inbox_messages_done_xact_insert BEFORE INSERT ON inbox_messages FOR EACH ROW
    WHEN (NEW.status = 'done' OR NEW.done_xact IS NOT NULL)
    EXECUTE FUNCTION stamp_done_xact();
DROP TRIGGER IF EXISTS inbox_messages_done_xact_update ON inbox_messages;
CREATE TRIGGER inbox_messages_done_xact_update BEFORE UPDATE ON inbox_messages FOR EACH ROW
    WHEN ((OLD.status = 'done') IS DISTINCT FROM (NEW.status = 'done')
          OR (NEW.status = 'done' AND OLD.end_to_end_id IS DISTINCT FROM NEW.end_to_end_id)
          OR OLD.done_xact IS DISTINCT FROM NEW.done_xact)
    EXECUTE FUNCTION stamp_done_xact();
COMMIT;
-- +goose StatementEnd
