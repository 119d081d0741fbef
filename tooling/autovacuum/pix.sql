-- One PIX's writes as the service makes them, each statement its own
-- transaction (pgbench script; tooling/autovacuum/run.sh).
\set acct random(1, 100000)
\set amt random(100, 500000)
SELECT 'E60701190' || to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYYMMDDHH24MISSUS') || lpad(:client_id::text, 3, '0') AS e2e, 'hist-' || lpad(:acct::text, 7, '0') AS acc \gset
INSERT INTO inbox_messages (end_to_end_id, account_id, amount_cents, payload, status, dispatch_due_at) VALUES (':e2e', ':acc', :amt, jsonb_build_object('end_to_end_id', ':e2e', 'account_id', ':acc', 'amount_cents', :amt, 'payer', jsonb_build_object('name', 'Pagador ' || :acct, 'document', lpad((:acct * 7)::text, 11, '0'), 'ispb', '60701190'), 'occurred_at', now()), 'pending', now() + interval '30 seconds');
UPDATE inbox_messages SET dispatched_at = now(), dispatch_due_at = now() + interval '30 seconds' WHERE end_to_end_id = ':e2e' AND status = 'pending';
INSERT INTO pix_credits (end_to_end_id, account_id, amount_cents, balance_after_cents, received_at) VALUES (':e2e', ':acc', :amt, 100000 + :amt, now());
UPDATE inbox_messages SET status = 'done', processed_at = now(), dispatch_due_at = NULL WHERE end_to_end_id = ':e2e' AND status = 'pending';
INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload) VALUES ('pix_credit', ':e2e', 'pix.credit.settled', jsonb_build_object('schema_version', 1, 'end_to_end_id', ':e2e', 'account_id', ':acc', 'amount_cents', :amt, 'balance_after_cents', 100000 + :amt, 'credited_at', now())) RETURNING id AS ev \gset
UPDATE outbox_events SET published_at = clock_timestamp() WHERE id = ':ev';
INSERT INTO idempotency_keys (caller, key, request_hash, lock_token, locked_until, expires_at) VALUES (':acc', gen_random_uuid(), md5(':e2e'), gen_random_uuid(), now() + interval '30 seconds', now() + interval '24 hours') RETURNING key AS k \gset
UPDATE idempotency_keys SET status_code = 201, response_body = jsonb_build_object('end_to_end_id', ':e2e', 'account_id', ':acc', 'amount_cents', :amt, 'status', 'debited'), lock_token = NULL, locked_until = NULL WHERE caller = ':acc' AND key = ':k';
