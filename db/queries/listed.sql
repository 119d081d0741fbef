-- The PIX the PSP catch-up lists from the PSP's own record (db/listed.go):
-- compared with what is stored without writing, the missing ones inserted.

-- name: Stored
-- What the inbox and the credits hold of the PIX a page of the PSP's
-- record lists (or of one delivery Receive did not store), to compare
-- without writing: a plain read, no row locked or written. With each, the
-- account its chave (else its charge's txid) names, and the account the
-- stored row's own names: an API Pix PIX's account as the credit resolves
-- it (credits.LockForCredit), so that a PIX told in one format and stored
-- in the other is judged by its account. One row for each PIX told,
-- numbered from 1 in their order (a page may list one twice). $1
-- end_to_end_ids, $2 their chaves, $3 their txids ('' for none).
SELECT l.n, l.end_to_end_id,
       m.end_to_end_id IS NOT NULL, COALESCE(m.status, ''), COALESCE(m.source, ''), COALESCE(m.amount_cents, 0),
       COALESCE(m.account_id, CASE WHEN m.pix_key IS NOT NULL THEN mk.account_id ELSE mc.account_id END, ''),
       COALESCE(m.pix_key, ''), COALESCE(m.txid, ''),
       c.end_to_end_id IS NOT NULL, COALESCE(c.account_id, ''), COALESCE(c.amount_cents, 0), COALESCE(c.charge_txid, ''),
       COALESCE(CASE WHEN l.pix_key <> '' THEN k.account_id ELSE ch.account_id END, '')
FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS l(end_to_end_id, pix_key, txid, n)
LEFT JOIN inbox_messages m ON m.end_to_end_id = l.end_to_end_id
LEFT JOIN pix_keys mk ON mk.key = m.pix_key
LEFT JOIN pix_charges mc ON mc.txid = m.txid
LEFT JOIN pix_credits c ON c.end_to_end_id = l.end_to_end_id
LEFT JOIN pix_keys k ON l.pix_key <> '' AND k.key = l.pix_key
LEFT JOIN pix_charges ch ON l.pix_key = '' AND l.txid <> '' AND ch.txid = l.txid

-- name: Insert
-- Inserts the listed PIX that Stored found neither in the inbox nor in the
-- credits, as a first delivery of each is inserted (credits.Receive): a
-- pending row due for dispatch at once. ON CONFLICT DO NOTHING: a webhook
-- that stored the same PIX in between wins, and this listing changes
-- nothing of its row (it is compared again, by Stored). A PIX credited in
-- between (its row then cleaned up) is not inserted either. In the byte
-- order of the end_to_end_ids, the lock order of every statement that
-- writes several inbox rows. Returns the end_to_end_ids inserted.
-- $1 end_to_end_ids, $2 amount_cents, $3 chaves, $4 txids, $5 refund
-- notices (NULL for none), $6 payloads, $7 psps, $8 the listing's
-- traceparent.
INSERT INTO inbox_messages (end_to_end_id, amount_cents, source, pix_key, txid, psp, refund_notice, payload, traceparent,
                            status, dispatch_due_at)
SELECT l.end_to_end_id, l.amount_cents, 'api_pix', NULLIF(l.pix_key, ''), NULLIF(l.txid, ''), NULLIF(l.psp, ''),
       l.refund_notice::jsonb, l.payload::jsonb, $8, 'pending', now()
FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
         AS l(end_to_end_id, amount_cents, pix_key, txid, refund_notice, payload, psp)
WHERE NOT EXISTS (SELECT 1 FROM pix_credits c WHERE c.end_to_end_id = l.end_to_end_id)
ORDER BY l.end_to_end_id COLLATE "C"
ON CONFLICT (end_to_end_id) DO NOTHING
RETURNING end_to_end_id

-- name: NoteRefunds
-- Records on the inbox rows of listed PIX (the same PIX as stored) the
-- devolucoes the PSP's record now shows, where they differ from what the
-- row holds: a notice unchanged writes nothing. Rows in the byte order of
-- their end_to_end_ids. $1 end_to_end_ids, $2 refund notices.
WITH changed AS (
    SELECT m.end_to_end_id, l.refund_notice::jsonb AS refund_notice
    FROM unnest($1::text[], $2::text[]) AS l(end_to_end_id, refund_notice)
    JOIN inbox_messages m ON m.end_to_end_id = l.end_to_end_id
    WHERE m.refund_notice IS DISTINCT FROM l.refund_notice::jsonb
    ORDER BY m.end_to_end_id COLLATE "C"
    FOR UPDATE OF m)
UPDATE inbox_messages m SET refund_notice = changed.refund_notice
FROM changed
WHERE m.end_to_end_id = changed.end_to_end_id
