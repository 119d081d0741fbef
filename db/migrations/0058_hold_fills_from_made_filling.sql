-- +goose Up
-- +goose NO TRANSACTION
-- A MED's hold made before holds filled (fill_to_cents NULL, 0035) that
-- its return makes one that fills (db.MakeFilling) takes, in that
-- transaction, what the account has available up to what it fills to
-- (source_kind 'hold_made_filling', source_id the hold's id): the money
-- that came in since it was made, which a hold that filled would have
-- taken (issue 37, attack review r5 MED-3); before, it stayed available,
-- spendable, while the report's return lacked it.
--
-- Only the check on pix_hold_fills.source_kind changes, as 0053: added
-- NOT VALID and validated in a transaction of its own, each with a lock
-- timeout (every credit that fills writes the table; the file runs again
-- from the start if one fails: every statement can run twice).
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_hold_fills DROP CONSTRAINT IF EXISTS pix_hold_fills_source_kind_check;
ALTER TABLE pix_hold_fills ADD CONSTRAINT pix_hold_fills_source_kind_check
    CHECK (source_kind IN ('credit', 'transfer_refund', 'refund_reversal', 'hold_release', 'hold_shrink',
                           'hold_made_filling')) NOT VALID;
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_hold_fills VALIDATE CONSTRAINT pix_hold_fills_source_kind_check;
COMMIT;
-- +goose StatementEnd
