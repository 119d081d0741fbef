-- The inbox's claim walk and the outbox relay's, as their pollers run them
-- (pgbench script; tooling/autovacuum/run.sh).
BEGIN;
SELECT end_to_end_id FROM inbox_messages m WHERE status = 'pending' AND dispatch_due_at <= now() ORDER BY dispatch_due_at LIMIT 10 FOR UPDATE SKIP LOCKED;
SELECT id FROM outbox_events WHERE published_at IS NULL ORDER BY seq LIMIT 100 FOR UPDATE SKIP LOCKED;
COMMIT;
