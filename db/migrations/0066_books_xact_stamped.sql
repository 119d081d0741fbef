-- +goose Up
-- +goose NO TRANSACTION
-- A movement's xact_id is the transaction that inserts it, whatever the
-- writer says (docs/design.md, "The reconciliation"): 0024 made it only a
-- DEFAULT, which an INSERT naming the column writes past. A movement
-- written with xact_id NULL (as if from before 0024), below the checkpoint
-- or far above any snapshot xmin is out of every run's window of new
-- movements (Unbalanced, New): the rotating recount alone would find it.
-- A BEFORE INSERT row trigger on every table of the books stamps it, as
-- stamp_done_xact does done_xact (0031); an UPDATE of it is refused
-- already (refuse_movement_change, 0024). A row trigger in plpgsql: one
-- call per movement, a few microseconds of the insert's.
--
-- reconcile_fences() expects it on every table of the books
-- (<table>_xact_stamp): a new table of the books without it is reported
-- missing. Not part of the digest a build of before 0064 computes
-- (since_0064). The triggers are created in one short transaction with a
-- lock timeout, as 0024.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION stamp_movement_xact() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.xact_id := pg_current_xact_id();
    RETURN NEW;
END $$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION reconcile_fences(OUT down text[], OUT seen text, OUT seen_before_0064 text)
LANGUAGE sql STABLE AS $$
-- The fences of the books that are not in force, and the digest of their
-- rows (saga/reconcile/reconcile.sql, Fences, reads them from here; 0039,
-- 0041, 0064): every trigger the reconciliation's trust stands on,
-- missing, disabled or firing on a replica only, or calling another
-- function than its own. seen_before_0064 is the digest as the builds
-- before 0064 compute it (without the triggers since): a build rolled
-- back writes it.
WITH books AS (
    SELECT DISTINCT d.refobjid::regclass AS tbl FROM pg_rewrite r
    JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass
    JOIN pg_class c ON c.oid = d.refobjid AND c.relkind = 'r'
    WHERE r.ev_class = to_regclass('account_movements') AND d.refobjid <> r.ev_class),
expected (tbl, tgname, fn, since_0064) AS (
    SELECT tbl, (SELECT relname FROM pg_class WHERE oid = tbl)::text || suffix, fn, since_0064
    FROM books CROSS JOIN (VALUES ('_append_only', 'refuse_movement_change', false),
                                  ('_no_delete', 'refuse_movement_change', false),
                                  ('_xact_stamp', 'stamp_movement_xact', true)) AS s (suffix, fn, since_0064)
    UNION ALL
    SELECT to_regclass(t), g, f, n FROM (VALUES
        ('reconcile_checkpoint', 'reconcile_checkpoint_guard', 'reconcile_guard', false),
        ('reconcile_checkpoint', 'reconcile_checkpoint_fence', 'reconcile_checkpoint_fence', false),
        ('reconcile_checkpoint', 'reconcile_checkpoint_seen', 'reconcile_fences_seen', true),
        ('reconcile_settled', 'reconcile_settled_guard', 'reconcile_guard', false),
        ('reconcile_settled', 'reconcile_settled_fence', 'reconcile_settled_fence', false),
        ('reconcile_settled', 'reconcile_settled_no_delete', 'reconcile_settled_fence', false),
        ('reconcile_settled', 'reconcile_settled_counted', 'reconcile_settled_counted', true),
        ('inbox_messages', 'inbox_messages_done_xact_insert', 'stamp_done_xact', false),
        ('inbox_messages', 'inbox_messages_done_xact_update', 'stamp_done_xact', false),
        ('accounts', 'accounts_opening_fixed', 'refuse_opening_change', false)) AS v (t, g, f, n)),
fences AS (
    SELECT e.tgname, e.fn, e.since_0064, t.oid, t.tgenabled, p.proname,
           concat_ws('|', e.tgname, t.oid, t.xmin, t.tgenabled, pg_get_triggerdef(t.oid), p.oid, p.xmin, md5(p.prosrc)) AS seen
    FROM expected e
    LEFT JOIN pg_trigger t ON t.tgrelid = e.tbl AND t.tgname = e.tgname
    LEFT JOIN pg_proc p ON p.oid = t.tgfoid)
SELECT ARRAY(SELECT tgname || CASE
                 WHEN oid IS NULL THEN ': missing'
                 WHEN tgenabled = 'D' THEN ': disabled'
                 WHEN tgenabled = 'R' THEN ': fires on a replica only'
                 ELSE ': calls ' || proname || ', not ' || fn END
             FROM fences WHERE oid IS NULL OR tgenabled NOT IN ('O', 'A') OR proname <> fn ORDER BY 1),
       md5(string_agg(seen, ',' ORDER BY seen)),
       md5(string_agg(seen, ',' ORDER BY seen) FILTER (WHERE NOT since_0064))
FROM fences
$$;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
DROP TRIGGER IF EXISTS pix_credits_xact_stamp ON pix_credits;
CREATE TRIGGER pix_credits_xact_stamp BEFORE INSERT ON pix_credits FOR EACH ROW EXECUTE FUNCTION stamp_movement_xact();
DROP TRIGGER IF EXISTS pix_transfers_xact_stamp ON pix_transfers;
CREATE TRIGGER pix_transfers_xact_stamp BEFORE INSERT ON pix_transfers FOR EACH ROW EXECUTE FUNCTION stamp_movement_xact();
DROP TRIGGER IF EXISTS pix_transfer_refunds_xact_stamp ON pix_transfer_refunds;
CREATE TRIGGER pix_transfer_refunds_xact_stamp BEFORE INSERT ON pix_transfer_refunds FOR EACH ROW EXECUTE FUNCTION stamp_movement_xact();
DROP TRIGGER IF EXISTS pix_refunds_xact_stamp ON pix_refunds;
CREATE TRIGGER pix_refunds_xact_stamp BEFORE INSERT ON pix_refunds FOR EACH ROW EXECUTE FUNCTION stamp_movement_xact();
DROP TRIGGER IF EXISTS pix_refund_reversals_xact_stamp ON pix_refund_reversals;
CREATE TRIGGER pix_refund_reversals_xact_stamp BEFORE INSERT ON pix_refund_reversals FOR EACH ROW EXECUTE FUNCTION stamp_movement_xact();
COMMIT;
-- +goose StatementEnd
