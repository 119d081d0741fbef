-- Maintenance: the retention's batched deletes (db/maintenance.go runs
-- them, through deleteBatch), a run's check of the inbox's live edge
-- (CreditWithoutDone) and the balances of some accounts, summed whole
-- (UnbalancedAccounts: the load tool's books). The reconciliation's other
-- checks, from its checkpoint, are in reconcile.sql; the devoluções' in
-- refunds.sql.

-- name: DeleteDoneInboxRows
-- Up to $2 inbox rows done longer than $1 ago, oldest first. Their credits
-- stay. SKIP LOCKED: a row a credit or a redelivery holds waits for the
-- next batch. The batch's keys are an array (= ANY (ARRAY(...))), not a
-- join (IN (...)): the rows are deleted through the primary key whatever
-- the planner guesses of the batch's size, where a semi-join may hash the
-- batch and read the whole table to match it.
DELETE FROM inbox_messages WHERE end_to_end_id = ANY (ARRAY(
    SELECT end_to_end_id FROM inbox_messages
    WHERE status = 'done' AND processed_at < now() - $1::interval
    ORDER BY processed_at LIMIT $2 FOR UPDATE SKIP LOCKED))

-- name: DeletePublishedEvents
-- Up to $2 events published longer than $1 ago, oldest first; by key, as
-- DeleteDoneInboxRows.
DELETE FROM outbox_events WHERE id = ANY (ARRAY(
    SELECT id FROM outbox_events WHERE published_at < now() - $1::interval
    ORDER BY published_at LIMIT $2 FOR UPDATE SKIP LOCKED))

-- name: DeleteExpiredKeys
-- Up to $1 expired Idempotency-Keys, oldest first.
DELETE FROM idempotency_keys WHERE (caller, key) IN (
    SELECT caller, key FROM idempotency_keys WHERE expires_at <= now() ORDER BY expires_at LIMIT $1
    FOR UPDATE SKIP LOCKED)

-- name: UnbalancedAccounts
-- The accounts whose id starts with $1 ('' for all) whose balance is not
-- their opening balance plus the sum of their movements (the view
-- account_movements, to which every saga that moves money adds its
-- tables; invariant I2).
SELECT a.id FROM accounts a
WHERE starts_with(a.id, $1) AND a.balance_cents <> a.opening_balance_cents
    + COALESCE((SELECT sum(amount_cents) FROM account_movements m WHERE m.account_id = a.id), 0)
ORDER BY a.id

-- name: CreditWithoutDone
-- Credits whose inbox row exists and is not done (I3): pending or failed,
-- the only other statuses, each named, so that the rows come from their
-- partial indexes (a few), not from a scan of the inbox.
SELECT c.end_to_end_id FROM pix_credits c JOIN inbox_messages m USING (end_to_end_id)
WHERE m.status = 'pending' OR m.status = 'failed' ORDER BY 1
