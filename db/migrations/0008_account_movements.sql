-- +goose Up
-- Every movement of an account's money, one row per movement, signed: the
-- books (I2) say balance = opening balance + the sum of its movements. A
-- saga that moves money adds its tables to this view in its own migration
-- (CREATE OR REPLACE VIEW, the earlier branches kept as they are), so the
-- reconciliation never needs to know the sagas.
CREATE VIEW account_movements (account_id, amount_cents, kind, ref) AS
    SELECT account_id, amount_cents, 'pix_credit', end_to_end_id FROM pix_credits
    UNION ALL
    SELECT account_id, -amount_cents, 'pix_transfer', id::text FROM pix_transfers
    UNION ALL
    SELECT account_id, amount_cents, 'pix_transfer_refund', transfer_id::text FROM pix_transfer_refunds;
