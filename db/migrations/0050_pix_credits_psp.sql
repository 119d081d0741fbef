-- +goose Up
-- +goose NO TRANSACTION
-- The PSP that delivered a PIX, kept with its credit (issue 37): the MED
-- notices of a PSP may hold only the PIX it delivered (saga/med, samePSP),
-- and they come up to 90 days after the PIX, while the inbox row that
-- named the PSP (inbox_messages.psp) is deleted after INBOX_RETENTION (30
-- days by default). The credit, which is never deleted, keeps it:
--   - the PSP's name (WEBHOOK_SECRETS, WEBHOOK_MTLS_PSPS) of the delivery
--     that stored the PIX;
--   - '' for a delivery not signed (signatures not required: any PSP's
--     notice passes, as before);
--   - for a PIX the PSP catch-up stored first (inbox psp 'catchup'), the
--     name of the PSP it lists (PSP_NAME);
--   - NULL: not known (a credit from before this migration whose inbox row
--     is gone, a catch-up PIX credited while PSP_NAME was unset). A MED
--     notice about such a PIX is answered 503 and logged, never taken, until
--     an operator records the PSP (docs/med.md, "A bank behind a PSP").
-- Written by the credit in its one transaction (db.Store.Credit).
--
-- A nullable column without a default: no table rewrite, only a brief
-- ACCESS EXCLUSIVE lock (pix_credits may hold 100M rows), in a transaction
-- of its own with a lock timeout, as 0014: a wait behind a long transaction
-- fails, to be run again, instead of holding up the credits queued behind
-- it.
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_credits ADD COLUMN IF NOT EXISTS psp text;
COMMIT;
-- +goose StatementEnd
-- The backfill: only what is derivable, the credits whose inbox row is
-- still there (the last INBOX_RETENTION of them, not the whole table), from
-- the row's psp; a row the catch-up stored is left NULL (which PSP it
-- listed is a setting of the service, not in the database), and read from
-- the inbox row while it lasts (saga/med, CreditPSP). It walks the inbox
-- by its primary key, 10,000 rows a batch, each batch committed on its own
-- (a DO block at the top level may COMMIT): no long transaction, and each
-- credit row locked only for its batch. Idempotent (psp IS NULL): a rollout
-- whose old workers credited rows without the PSP meanwhile can run the
-- same block again once they are gone (docs/operations.md).
-- +goose StatementBegin
DO $$
DECLARE
    after text := '';
    last  text;
BEGIN
    LOOP
        WITH batch AS (
            SELECT end_to_end_id, psp FROM inbox_messages
            WHERE end_to_end_id > after ORDER BY end_to_end_id LIMIT 10000),
        filled AS (
            UPDATE pix_credits c SET psp = COALESCE(b.psp, '')
            FROM batch b
            WHERE c.end_to_end_id = b.end_to_end_id AND c.psp IS NULL AND b.psp IS DISTINCT FROM 'catchup')
        SELECT max(end_to_end_id) INTO last FROM batch;
        EXIT WHEN last IS NULL;
        after := last;
        COMMIT;
    END LOOP;
END $$;
-- +goose StatementEnd
