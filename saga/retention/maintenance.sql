-- The retention's batched deletes (store.go runs them, through
-- deleteBatch). The file keeps its name from db/queries, where the
-- statements were: traces name them maintenance.<name>, as they always
-- did.

-- name: DeleteDoneInboxRows
-- Up to $2 inbox rows done longer than $1 ago, oldest first. Their credits
-- stay. SKIP LOCKED: a row a credit or a redelivery holds waits for the
-- next batch. The batch's rows are deleted where the subquery locked them,
-- by their ctid (= ANY (ARRAY(...)): a TID scan), never looked up again
-- through the primary key: with months of rows the primary key is far
-- larger than the buffers, and a lookup per row read a block per row from
-- outside them (docs/benchmarks.md, "Cost as the tables grow": 1,000 rows
-- in 7 ms by key, 2 ms by ctid, among 10 million). A locked row keeps its
-- ctid until the statement ends.
DELETE FROM inbox_messages WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM inbox_messages
    WHERE status = 'done' AND processed_at < now() - $1::interval
    ORDER BY processed_at LIMIT $2 FOR UPDATE SKIP LOCKED))

-- name: DeletePublishedEvents
-- Up to $2 events published longer than $1 ago, oldest first; by ctid, as
-- DeleteDoneInboxRows (the primary key is a random uuid: 1,000 rows read
-- 1,300 blocks of it and took 57 ms among 10 million events, 2 ms by
-- ctid).
DELETE FROM outbox_events WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM outbox_events WHERE published_at < now() - $1::interval
    ORDER BY published_at LIMIT $2 FOR UPDATE SKIP LOCKED))

-- name: DeleteExpiredKeys
-- Up to $1 expired Idempotency-Keys, oldest first; by ctid, as
-- DeleteDoneInboxRows (the primary key is the caller's random uuid: 27 ms
-- a batch by key among 10 million keys, 2 ms by ctid).
DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM idempotency_keys WHERE expires_at <= now() ORDER BY expires_at LIMIT $1
    FOR UPDATE SKIP LOCKED))
