-- A customer's recent credits: an index-only scan of pix_credits_account_idx
-- while the visibility map is current (pgbench script; tooling/autovacuum/run.sh).
\set acct random(1, 100000)
SELECT count(*) FROM pix_credits WHERE account_id = 'hist-' || lpad(:acct::text, 7, '0') AND credited_at >= now() - interval '1 hour';
