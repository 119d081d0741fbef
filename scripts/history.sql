-- scripts/history.sql: PIX of history for the benchmark's growth figures
-- (scripts/bench.sh, BENCH_ONLY=growth, BENCH_HISTORY; docs/benchmarks.md,
-- "Cost as the tables grow"). Run by psql on the benchmark's own database,
-- after the migrations:
--
--   psql "$DATABASE_URL" -v n=10000000 -v tag=H -f scripts/history.sql
--
-- It writes n done PIX as the service leaves them, set-based from
-- generate_series (no row by row), in one transaction per table:
--   - accounts hist-0000001 ... (:accounts of them, made once; each with an
--     EVP Pix key), the PIX spread over them;
--   - inbox_messages: the row done, credited once, delivered once (one in
--     ten twice), its payload the webhook as stored (native) or the API
--     Pix item (source api_pix: the PIX's chave);
--   - pix_credits: its credit (I1, I3); the accounts' balances grow by their
--     credits, so that the books balance (I2);
--   - outbox_events: its pix.credit.settled event, published;
--   - idempotency_keys: an answered key of POST /pix (one per PIX: the
--     table's growth, not a transfer's; no transfer is written).
-- end_to_end_id is the BCB's shape: E, a PSP's ISPB, the PIX's minute
-- (yyyyMMddHHmm) and 11 letters or digits (:tag and a sequence), so that
-- the primary key's order is the production one (by PSP, then time).
--
-- Times: each table's rows are spread over the window its retention keeps,
-- the newest at :lo of it, the oldest at :hi (fractions of the window): the
-- inbox and the credits over INBOX_RETENTION (:inbox_window), the events
-- over OUTBOX_RETENTION (:outbox_window), the keys over IDEMPOTENCY_KEY_TTL
-- (:key_window, expires_at = created_at + it). With :hi < 1 the retention
-- finds nothing of them to delete; with :lo > 1 (the retention figure's own
-- rows) it finds all of them.
--
-- Variables (psql -v): n (required), tag (one letter, a batch's own ids:
-- H history, R the retention's rows, C the catch-up's window), accounts
-- (100000), lo (0.01), hi (0.97), source (native | api_pix), the three
-- windows ('720 hours', '168 hours', '24 hours': the service's defaults).
-- Then ANALYZE the tables (scripts/bench.sh does, VACUUM first unless
-- BENCH_HISTORY_VACUUM=0).

\set ON_ERROR_STOP on
\if :{?n}
\else
  \echo 'history.sql: -v n=<PIX> is required'
  \quit
\endif
\if :{?tag}
\else
  \set tag H
\endif
\if :{?accounts}
\else
  \set accounts 100000
\endif
\if :{?lo}
\else
  \set lo 0.01
\endif
\if :{?hi}
\else
  \set hi 0.97
\endif
\if :{?source}
\else
  \set source native
\endif
\if :{?inbox_window}
\else
  \set inbox_window '720 hours'
\endif
\if :{?outbox_window}
\else
  \set outbox_window '168 hours'
\endif
\if :{?key_window}
\else
  \set key_window '24 hours'
\endif

-- One instant for every table of the batch.
SELECT now() AS anchor \gset
-- The seed writes what the service's transactions would have, and only
-- that: the foreign keys' checks (a credit's account, made above) are
-- skipped, a row at a time they would take half the seed's time. Needs a
-- superuser, as the benchmark's own cluster has.
SET session_replication_role = replica;

-- The accounts and their keys, made by the first batch.
INSERT INTO accounts (id, owner_name, opening_balance_cents, balance_cents, created_at, updated_at)
SELECT 'hist-' || lpad(a::text, 7, '0'), 'Cliente ' || a, 100000, 100000,
       :'anchor'::timestamptz - :'inbox_window'::interval * 2, :'anchor'::timestamptz - :'inbox_window'::interval * 2
FROM generate_series(1, :accounts) a
ON CONFLICT (id) DO NOTHING;
INSERT INTO pix_keys (key, key_type, account_id, created_at)
SELECT md5('hist-' || a)::uuid::text, 'evp', 'hist-' || lpad(a::text, 7, '0'), :'anchor'::timestamptz - :'inbox_window'::interval * 2
FROM generate_series(1, :accounts) a
ON CONFLICT (key) DO NOTHING;

-- Every fact of PIX i, computed in one place for the four tables: f is its
-- age as a fraction of a window (PIX 1 the oldest), acct its account
-- (spread by a multiplicative hash), at the instant its credit committed.
CREATE TEMP VIEW history AS
SELECT i, acct, amount, f,
       'hist-' || lpad(acct::text, 7, '0') AS account_id,
       md5('hist-' || acct)::uuid::text AS pix_key,
       'E' || ispb || to_char(at AT TIME ZONE 'UTC', 'YYYYMMDDHH24MI') || :'tag' || lpad(i::text, 10, '0') AS end_to_end_id,
       ispb, at,
       -- received a moment before the credit, which a webhook's dispatch
       -- and credit take
       at - interval '1 millisecond' * (40 + i % 400) AS received_at
FROM (SELECT i, 1 + (i * 2654435761) % :accounts AS acct, 100 + (i * 7919) % 499900 AS amount,
             (ARRAY['60701190', '00000000', '18236120', '00360305'])[1 + i % 4] AS ispb,
             :hi - (:hi - :lo) * (i - 1) / greatest(:n - 1, 1)::numeric AS f,
             :'anchor'::timestamptz - :'inbox_window'::interval * (:hi - (:hi - :lo) * (i - 1) / greatest(:n - 1, 1)::numeric) AS at
      FROM generate_series(1, :n::bigint) i) facts;

\echo inbox_messages
INSERT INTO inbox_messages (end_to_end_id, account_id, amount_cents, payload, status, attempts, deliveries,
                            received_at, last_delivered_at, processed_at, dispatched_at, source, pix_key, psp, drive)
SELECT end_to_end_id, account_id, amount,
       CASE WHEN :'source' = 'api_pix' THEN
           jsonb_build_object('endToEndId', end_to_end_id, 'valor', to_char(amount / 100.0, 'FM9999999990.00'),
                              'chave', pix_key, 'horario', to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                              'infoPagador', 'pagamento ' || i)
       ELSE
           jsonb_build_object('end_to_end_id', end_to_end_id, 'account_id', account_id, 'amount_cents', amount,
                              'payer', jsonb_build_object('name', 'Pagador ' || i % 100000, 'document', lpad((i * 7 % 99999999999)::text, 11, '0'), 'ispb', ispb),
                              'occurred_at', to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
       END,
       'done', 1, 1 + (i % 10 = 0)::int, received_at, received_at, at, received_at + interval '5 milliseconds',
       :'source', CASE WHEN :'source' = 'api_pix' THEN pix_key END, CASE WHEN :'source' = 'api_pix' THEN 'pspsim' ELSE 'dev-psp' END, 1
FROM history;

\echo pix_credits
INSERT INTO pix_credits (end_to_end_id, account_id, amount_cents, balance_after_cents, credited_at, received_at)
-- balance_after is a plausible balance, not the exact running one: nothing
-- reads a past credit's balance_after but a customer's statement.
SELECT end_to_end_id, account_id, amount, 100000 + amount * (1 + i / :accounts), at, received_at
FROM history;

\echo accounts
UPDATE accounts a SET balance_cents = a.balance_cents + s.total
FROM (SELECT account_id, sum(amount) AS total FROM history GROUP BY account_id) s
WHERE a.id = s.account_id;

\echo outbox_events
INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, created_at, published_at)
SELECT 'pix_credit', end_to_end_id, 'pix.credit.settled',
       jsonb_build_object('schema_version', 1, 'end_to_end_id', end_to_end_id, 'account_id', account_id,
                          'amount_cents', amount, 'balance_after_cents', 100000 + amount * (1 + i / :accounts),
                          'credited_at', at),
       ev_at, ev_at + interval '1 millisecond' * (5 + i % 50)
FROM (SELECT *, :'anchor'::timestamptz - :'outbox_window'::interval * f AS ev_at FROM history) h;

\echo idempotency_keys
INSERT INTO idempotency_keys (caller, key, request_hash, status_code, response_body, created_at, expires_at)
SELECT account_id, md5(:'tag' || i)::uuid, encode(sha256(convert_to(end_to_end_id, 'UTF8')), 'hex'), 201,
       jsonb_build_object('id', md5('transfer' || :'tag' || i)::uuid, 'end_to_end_id', end_to_end_id, 'account_id', account_id,
                          'amount_cents', amount, 'pix_key', pix_key, 'status', 'debited',
                          'workflow_id', 'pix-transfer:' || md5('transfer' || :'tag' || i)::uuid),
       key_at, key_at + :'key_window'::interval
FROM (SELECT *, :'anchor'::timestamptz - :'key_window'::interval * f AS key_at FROM history) h;
