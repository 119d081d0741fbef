-- +goose Up
-- +goose NO TRANSACTION
-- Money a hold stops holding fills the account's other holds that still
-- lack (issue 37, the attack review of the holds kept in parts, High): a
-- hold released (db.Release, source_kind 'hold_release', source_id the
-- released hold's id) or shrunk in place (db.Shrink, 'hold_shrink', the
-- id of its pix.hold.shrunk event: a hold may shrink more than once) gave
-- its money straight back to the available balance, spendable, while
-- another MED's hold of the account lacked it; had the money come in after
-- that hold was made, it would have filled it. It now fills them, oldest
-- first, in the release's or the shrink's transaction (db.FillHolds), as
-- every money come back to the account does (0035).
--
-- Only 0035's check on pix_hold_fills.source_kind changes: added NOT
-- VALID and validated in a transaction of its own, each with a lock
-- timeout, as 0035 (every credit that fills writes the table; the file
-- runs again from the start if one fails: every statement can run twice).
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_hold_fills DROP CONSTRAINT IF EXISTS pix_hold_fills_source_kind_check;
ALTER TABLE pix_hold_fills ADD CONSTRAINT pix_hold_fills_source_kind_check
    CHECK (source_kind IN ('credit', 'transfer_refund', 'refund_reversal', 'hold_release', 'hold_shrink')) NOT VALID;
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_hold_fills VALIDATE CONSTRAINT pix_hold_fills_source_kind_check;
COMMIT;
-- +goose StatementEnd
