-- The reconciliation's check of the inbox's live edge (CreditWithoutDone).
-- Its other checks, from its checkpoint, are in reconcile.sql; the
-- devoluções' in refunds.sql. The file's name is kept from
-- db/queries/maintenance.sql, where it was, so that traces still say
-- maintenance.CreditWithoutDone. (The retention's deletes are its own:
-- saga/retention/maintenance.sql.)

-- name: CreditWithoutDone
-- Credits whose inbox row exists and is not done (I3): pending or failed,
-- the only other statuses, each named, so that the rows come from their
-- partial indexes (a few), not from a scan of the inbox.
SELECT c.end_to_end_id FROM pix_credits c JOIN inbox_messages m USING (end_to_end_id)
WHERE m.status = 'pending' OR m.status = 'failed' ORDER BY 1
