-- +goose Up
-- +goose NO TRANSACTION
-- A hold that fills keeps what its PIX's room cut short of its fill target
-- (issue 37, attack review B, HIGH-1): a MED's hold made while something
-- else took part of its PIX (a cautionary block of it, a devolução of it
-- pending) filled only to what the PIX had left, for good: the block
-- released, the devolução reversed, the money came back and was spendable
-- while the MED of that very PIX lacked it. fill_short_cents is what the
-- hold's fill_to_cents is short of what its holder wants (what it asked,
-- less what was returned of it, at most what it was shrunk to): when the
-- PIX gets room back (a hold of it released or shrunk, a devolução of it
-- reversed), the hold's fill_to_cents is raised by up to that much, in the
-- same transaction, before the money freed fills anything (db.Release,
-- db.Shrink, saga/refund's reversal; pix.hold.fill_raised).
--
-- A column with a constant default (no rewrite: the holds made before keep
-- 0, filling to what they were made with, as before), and its check added
-- NOT VALID and validated in a transaction of its own, each with a lock
-- timeout, as 0035 (pix_holds is read by every credit; the file runs again
-- from the start if one fails: every statement can run twice).
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_holds ADD COLUMN IF NOT EXISTS fill_short_cents bigint NOT NULL DEFAULT 0;
ALTER TABLE pix_holds DROP CONSTRAINT IF EXISTS pix_holds_fill_short;
ALTER TABLE pix_holds ADD CONSTRAINT pix_holds_fill_short
    CHECK (fill_short_cents >= 0 AND (fill_short_cents = 0 OR fill_to_cents + fill_short_cents <= asked_cents)) NOT VALID;
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_holds VALIDATE CONSTRAINT pix_holds_fill_short;
COMMIT;
-- +goose StatementEnd
