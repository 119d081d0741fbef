-- +goose Up
-- +goose NO TRANSACTION
-- A hold that fills may be captured in part and kept (db.NewRefund.KeepHold,
-- a MED returned in parts), shrunk in place (db.Shrink) and given back the
-- money of a devolução of it that was reversed (db.RestoreHold, in the
-- reversal's transaction): the money a MED report must keep held is never
-- released and held anew, so at no instant is it available (issue 37).
--
-- A hold captured in part down to nothing stays active, holding and
-- filling to 0, until its holder releases it: a reversal of its devolução
-- holds the money again in it. So 0035's fill_to_cents BETWEEN 1 AND
-- asked_cents becomes BETWEEN 0 AND asked_cents (a hold that does not fill
-- still holds more than 0: pix_holds_amount_within_asked).
--
-- pix_holds is read by every credit (0037's probe): a short transaction
-- with a lock timeout, the constraint added NOT VALID and validated in a
-- transaction of its own, as 0035 (the file runs again from the start if
-- one fails: every statement can run twice).
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_holds DROP CONSTRAINT IF EXISTS pix_holds_fills_up_to;
ALTER TABLE pix_holds ADD CONSTRAINT pix_holds_fills_up_to
    CHECK (fill_to_cents IS NULL OR (up_to AND fill_to_cents BETWEEN 0 AND asked_cents AND amount_cents <= fill_to_cents)) NOT VALID;
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_holds VALIDATE CONSTRAINT pix_holds_fills_up_to;
COMMIT;
-- +goose StatementEnd
-- The parts captured of holds kept active (db.NewRefund.KeepHold): one
-- row per devolução, written with its debit; restored_at is when its
-- reversal gave the part back to the hold (db.RestoreHold: once, the row's
-- restored_at the fence). No foreign key to pix_refunds: it would take
-- that busy table's SHARE ROW EXCLUSIVE lock (0035's pix_hold_fills).
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
CREATE TABLE IF NOT EXISTS pix_hold_parts (
    refund_id    text        PRIMARY KEY,
    hold_id      uuid        NOT NULL REFERENCES pix_holds (id),
    amount_cents bigint      NOT NULL CHECK (amount_cents > 0),
    captured_at  timestamptz NOT NULL,
    restored_at  timestamptz
);
COMMIT;
-- +goose StatementEnd
