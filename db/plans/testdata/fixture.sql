-- The books of a bank some months into production, scaled down, for
-- TestStatementsAreBoundedByAnIndex (plans_test.go): enough rows that the
-- planner's choices are production's (an index wins over a scan only once a
-- table is many pages), in production's shape: almost everything final
-- (credited, settled, returned, published, answered, concluded), a thin
-- live edge (pending, failed, open, unpublished, reserved, scheduled) of
-- well under 5% of each table; and in production's proportions: the inbox
-- keeps 30 days (INBOX_RETENTION) of the credits' 180. Run once into a
-- migrated schema, then ANALYZE. e(n) is the n-th end_to_end_id, acc(n)
-- the account of the n-th PIX: PIX 1..180,000 are credited, one every
-- 86.4 s, the inbox keeps the last 30,000 of them and 200 more, pending
-- or failed.

CREATE FUNCTION pg_temp.e(n bigint) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT 'E' || lpad(n::text, 31, '0') $$;

CREATE FUNCTION pg_temp.acc(n bigint) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT 'acc-' || lpad((n % 20000 + 1)::text, 6, '0') $$;

-- 20,000 accounts, a Pix key each, 10,000 charges (all but 50 concluded).
INSERT INTO accounts (id, owner_name, opening_balance_cents, balance_cents)
SELECT pg_temp.acc(i), 'Cliente ' || i, 10000000, 10000000 FROM generate_series(0, 19999) i;

INSERT INTO pix_keys (key, key_type, account_id)
SELECT 'chave-' || i || '@pixbank.example', 'email', pg_temp.acc(i) FROM generate_series(0, 19999) i;

INSERT INTO pix_charges (txid, account_id, amount_expected_cents, status, concluded_by)
SELECT 'cob' || i, pg_temp.acc(i * 18), 1000 + i * 18 % 5000, CASE WHEN i <= 9950 THEN 'CONCLUIDA' ELSE 'ATIVA' END,
       CASE WHEN i <= 9950 THEN pg_temp.e(i * 18) END
FROM generate_series(1, 10000) i;

-- 180,000 credits, one every 86.4 s back from now (180 days).
INSERT INTO pix_credits (end_to_end_id, account_id, amount_cents, balance_after_cents, credited_at, received_at,
                         charge_txid, charge_outcome)
SELECT pg_temp.e(i), pg_temp.acc(i), 1000 + i % 5000, 10000000, now() - (180000 - i) * interval '86.4 seconds',
       now() - (180000 - i) * interval '86.4 seconds' - interval '1 second',
       CASE WHEN i % 18 = 0 AND i / 18 <= 9950 THEN 'cob' || (i / 18) END,
       CASE WHEN i % 18 = 0 AND i / 18 <= 9950 THEN 'concluded' END
FROM generate_series(1, 180000) i;

-- The inbox: the last 30,000 credited (done), 150 pending, 50 failed.
INSERT INTO inbox_messages (end_to_end_id, account_id, amount_cents, payload, status, attempts, last_error, deliveries,
                            received_at, last_delivered_at, processed_at, dispatch_due_at, dispatched_at, source, psp,
                            drive, traceparent)
SELECT pg_temp.e(i), pg_temp.acc(i), 1000 + i % 5000,
       jsonb_build_object('endToEndId', pg_temp.e(i), 'valor', ((1000 + i % 5000) / 100.0)::text,
                          'horario', now() - (180200 - i) * interval '86.4 seconds',
                          'pagador', jsonb_build_object('nome', 'Pagador ' || i, 'cpf', lpad((i::bigint * 7919 % 99999999999)::text, 11, '0')),
                          'infoPagador', 'pagamento ' || i),
       CASE WHEN i <= 180000 THEN 'done' WHEN i <= 180150 THEN 'pending' ELSE 'failed' END,
       CASE WHEN i <= 180150 THEN 1 ELSE 8 END,
       CASE WHEN i > 180150 THEN 'account not found' END,
       1 + (i % 50 = 0)::int,
       now() - (180200 - i) * interval '86.4 seconds', now() - (180200 - i) * interval '86.4 seconds',
       CASE WHEN i <= 180000 THEN now() - (180000 - i) * interval '86.4 seconds'
            WHEN i > 180150 THEN now() - (180200 - i) * interval '1 second' END,
       CASE WHEN i > 180000 AND i <= 180150 THEN now() + (i % 120) * interval '1 second' END,
       CASE WHEN i > 180000 AND i <= 180150 THEN now() - interval '1 minute' END,
       'native', 'psp-' || i % 3, 1, '00-' || md5(i::text) || '-' || left(md5(i::text), 16) || '-01'
FROM generate_series(150001, 180200) i;

-- 60,000 transfers: 1% refunded, 60 open (debited or submitted), the rest
-- settled.
INSERT INTO pix_transfers (id, end_to_end_id, account_id, amount_cents, pix_key, description, status, balance_after_cents,
                           failure_reason, idempotency_key, requested_by, created_at, updated_at, submitted_at, settled_at,
                           refunded_at, dispatch_due_at, dispatched_at)
SELECT md5('t' || i)::uuid, 'ET' || lpad(i::text, 30, '0'), pg_temp.acc(i * 7), 500 + i % 9000,
       'destino-' || i % 1000 || '@outro.example', NULL,
       CASE WHEN i > 59940 THEN CASE WHEN i % 2 = 0 THEN 'debited' ELSE 'submitted' END
            WHEN i % 100 = 0 THEN 'refunded' ELSE 'settled' END,
       9000000, CASE WHEN i % 100 = 0 AND i <= 59940 THEN 'rejected by the PSP' END, md5('k' || i)::uuid, pg_temp.acc(i * 7),
       now() - (60000 - i) * interval '100 seconds', now() - (60000 - i) * interval '100 seconds',
       now() - (60000 - i) * interval '100 seconds',
       CASE WHEN i % 100 <> 0 AND i <= 59940 THEN now() - (60000 - i) * interval '100 seconds' END,
       CASE WHEN i % 100 = 0 AND i <= 59940 THEN now() - (60000 - i) * interval '100 seconds' END,
       CASE WHEN i > 59940 THEN now() + interval '2 minutes' END, CASE WHEN i > 59940 THEN now() END
FROM generate_series(1, 60000) i;

INSERT INTO pix_transfer_refunds (transfer_id, account_id, amount_cents, balance_after_cents, reason, refunded_at)
SELECT id, account_id, amount_cents, 9000000, failure_reason, refunded_at FROM pix_transfers WHERE status = 'refunded';

-- 10,000 devoluções of PIX credited (every 18th): 5% reversed, 25 open,
-- the rest returned; a third with the PSP's notice.
INSERT INTO pix_refunds (id, end_to_end_id, account_id, amount_cents, reason, status, rtr_id, balance_after_cents,
                         failure_reason, idempotency_key, requested_by, created_at, updated_at, requested_at, returned_at,
                         reversed_at, psp_notice, noticed_at, dispatch_due_at, dispatched_at, psp_asked_at, psp_asks)
SELECT 'D' || i, pg_temp.e(i * 18), pg_temp.acc(i * 18), 100, 'devolução',
       CASE WHEN i > 9975 THEN 'requested' WHEN i % 20 = 0 THEN 'reversed' ELSE 'returned' END,
       CASE WHEN i % 20 <> 0 THEN 'R' || i END, 9000000,
       CASE WHEN i % 20 = 0 AND i <= 9975 THEN 'NAO_REALIZADO' END, md5('r' || i)::uuid, pg_temp.acc(i * 18),
       now() - (10000 - i) * interval '10 minutes', now() - (10000 - i) * interval '10 minutes',
       now() - (10000 - i) * interval '10 minutes',
       CASE WHEN i % 20 <> 0 AND i <= 9975 THEN now() - (10000 - i) * interval '10 minutes' END,
       CASE WHEN i % 20 = 0 AND i <= 9975 THEN now() - (10000 - i) * interval '10 minutes' END,
       CASE WHEN i > 9975 THEN NULL WHEN i % 20 = 0 THEN 'NAO_REALIZADO' WHEN i % 3 = 0 THEN 'DEVOLVIDO' END,
       CASE WHEN i <= 9975 AND (i % 20 = 0 OR i % 3 = 0) THEN now() - (10000 - i) * interval '10 minutes' END,
       CASE WHEN i > 9975 THEN now() + interval '2 minutes' END, CASE WHEN i > 9975 THEN now() END,
       now() - (10000 - i) * interval '10 minutes', 1
FROM generate_series(1, 10000) i;

INSERT INTO pix_refund_reversals (refund_id, account_id, amount_cents, balance_after_cents, reason, reversed_at)
SELECT id, account_id, amount_cents, 9000000, failure_reason, reversed_at FROM pix_refunds WHERE status = 'reversed';

-- 100,000 events (OUTBOX_RETENTION: 7 days), published but for the last
-- 100.
INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, created_at, published_at)
SELECT 'pix_credit', pg_temp.e(i), 'pix.credit.settled',
       jsonb_build_object('schema_version', 1, 'end_to_end_id', pg_temp.e(i), 'account_id', pg_temp.acc(i),
                          'amount_cents', 1000 + i % 5000, 'credited_at', now() - (100000 - i) * interval '6 seconds'),
       now() - (100000 - i) * interval '6 seconds', CASE WHEN i <= 99900 THEN now() - (100000 - i) * interval '6 seconds' END
FROM generate_series(1, 100000) i;

-- 60,000 Idempotency-Keys of the last day: answered, but for 25 reserved;
-- 2% expired (the retention's next batches).
INSERT INTO idempotency_keys (caller, key, request_hash, lock_token, locked_until, status_code, response_body, created_at, expires_at)
SELECT pg_temp.acc(i * 7), md5('k' || i)::uuid, md5('h' || i),
       CASE WHEN i > 59975 THEN md5('l' || i)::uuid END, CASE WHEN i > 59975 THEN now() + interval '30 seconds' END,
       CASE WHEN i <= 59975 THEN 201 END, CASE WHEN i <= 59975 THEN '{"status":"debited"}'::jsonb END,
       now() - (60000 - i) * interval '1.44 seconds',
       now() - (60000 - i) * interval '1.44 seconds' + interval '24 hours' - interval '30 minutes'
FROM generate_series(1, 60000) i;

-- 15,000 scheduled PIX: 450 still to run (the next weeks), the rest
-- executed (each with its transfer), failed or cancelled.
INSERT INTO pix_scheduled (id, account_id, amount_cents, pix_key, description, scheduled_for, run_at, status, failure_reason,
                           transfer_id, end_to_end_id, idempotency_key, requested_by, created_at, updated_at, concluded_at,
                           dispatch_due_at, dispatched_at)
SELECT md5('s' || i)::uuid, pg_temp.acc(i * 7), 500 + i % 9000, 'destino-' || i % 1000 || '@outro.example', NULL,
       (now() + (i - 14550) * interval '1 hour')::date, now() + (i - 14550) * interval '1 hour',
       CASE WHEN i > 14550 THEN 'scheduled' WHEN i % 50 = 0 THEN 'failed' WHEN i % 50 = 1 THEN 'cancelled' ELSE 'executed' END,
       CASE WHEN i <= 14550 AND i % 50 = 0 THEN 'insufficient_funds' END,
       CASE WHEN i <= 14550 AND i % 50 > 1 THEN md5('t' || i)::uuid END,
       CASE WHEN i <= 14550 AND i % 50 > 1 THEN 'ET' || lpad(i::text, 30, '0') END,
       md5('sk' || i)::uuid, pg_temp.acc(i * 7), now() - interval '60 days', now(),
       CASE WHEN i <= 14550 THEN now() + (i - 14550) * interval '1 hour' END,
       CASE WHEN i > 14550 THEN now() + (i - 14550) * interval '1 hour' END, CASE WHEN i > 14550 THEN now() END
FROM generate_series(1, 15000) i;

-- 20,000 holds of PIX received (cautionary blocks): 200 active, the rest
-- ended, released or captured by a devolução of their PIX (each even one
-- by the devolução of the same PIX); the accounts' held amounts are their
-- active holds'.
INSERT INTO pix_holds (id, ref, account_id, end_to_end_id, kind, reason, asked_cents, up_to, amount_cents, status, refund_id,
                       end_reason, created_at, ended_at)
SELECT md5('hold' || i)::uuid, 'block:' || i, pg_temp.acc(i * 9), pg_temp.e(i * 9), 'cautionary_block', 'suspeita de fraude',
       100, false, 100,
       CASE WHEN i > 19800 THEN 'active' WHEN i % 2 = 0 THEN 'captured' ELSE 'released' END,
       CASE WHEN i <= 19800 AND i % 2 = 0 THEN 'D' || (i / 2) END,
       CASE WHEN i <= 19800 AND i % 2 = 1 THEN '72 h' END,
       now() - (20000 - i) * interval '10 minutes',
       CASE WHEN i <= 19800 THEN now() - (20000 - i) * interval '10 minutes' + interval '1 hour' END
FROM generate_series(1, 20000) i;

-- 2,000 holds of MED (0035), filling from later credits: 20 still
-- filling (5 of them holding nothing yet), the rest full, a tenth of them
-- still active; each fill recorded (pix_hold_fills), two credits a hold.
INSERT INTO pix_holds (id, ref, account_id, end_to_end_id, kind, reason, asked_cents, up_to, fill_to_cents, amount_cents,
                       status, end_reason, created_at, ended_at)
SELECT md5('med' || i)::uuid, 'med:' || i, pg_temp.acc(i * 11), pg_temp.e(i * 11), 'med', NULL, 10000, true, 10000,
       CASE WHEN i > 1995 THEN 0 WHEN i > 1980 THEN 4000 ELSE 10000 END,
       CASE WHEN i > 1980 OR i % 20 = 0 THEN 'active' ELSE 'released' END,
       NULL, now() - (2000 - i) * interval '1 hour',
       CASE WHEN i <= 1980 AND i % 20 <> 0 THEN now() - (2000 - i) * interval '1 hour' + interval '30 minutes' END
FROM generate_series(1, 2000) i;
INSERT INTO pix_hold_fills (hold_id, source_kind, source_id, amount_cents, amount_after_cents, filled_at)
SELECT md5('med' || i)::uuid, 'credit', pg_temp.e(i * 11 + k), 2000 * k, 2000 * k + 2000, now() - (2000 - i) * interval '1 hour'
FROM generate_series(1, 1995) i, generate_series(1, 2) k;
-- The parts captured of those holds, kept (a MED returned in parts, 0051):
-- one per devolução, a few of them reversed and given back.
INSERT INTO pix_hold_parts (refund_id, hold_id, amount_cents, captured_at, restored_at)
SELECT 'MEDPART' || i, md5('med' || i)::uuid, 1000, now() - (2000 - i) * interval '1 hour',
       CASE WHEN i % 50 = 0 THEN now() - (2000 - i) * interval '1 hour' + interval '10 minutes' END
FROM generate_series(1, 1995) i;

UPDATE accounts a SET held_cents = h.cents
FROM (SELECT account_id, sum(amount_cents) AS cents FROM pix_holds WHERE status = 'active' GROUP BY account_id) h
WHERE a.id = h.account_id;

INSERT INTO psp_catchup (covered_until) VALUES (now() - interval '1 minute');

-- The reconciliation's checkpoint some runs in: every account's history
-- counted (its settled sum), the done rows' pass over. Written as the run
-- writes them (0024's guard).
SELECT set_config('pix.reconcile', pg_current_xact_id()::text, true);
INSERT INTO reconcile_settled (account_id, settled_cents)
SELECT id, balance_cents - opening_balance_cents FROM accounts;
UPDATE reconcile_checkpoint SET settled_before = pg_snapshot_xmin(pg_current_snapshot()), done_history_checked = true;
