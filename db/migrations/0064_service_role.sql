-- +goose Up
-- +goose NO TRANSACTION
-- Two roles (docs/operations.md, "The database's roles"; docs/design.md,
-- "What it does not catch"): a migrator that owns the schema, its tables,
-- functions and triggers and runs pixd migrate, and a service role the api
-- and the worker connect as, which owns nothing: it can't ALTER a table,
-- disable a trigger or replace a function. What the fences still took on
-- trust from whoever writes is closed here, for a writer that is not the
-- owner:
-- - the run says it is the run by setting pix.reconcile, a setting any role
--   may set (0024's guard: a guard against mistakes). What the run writes
--   that the database can check, it checks: a settled sum inserted (an
--   account counted for the first time) must be its account's movements
--   below the snapshot xmin (reconcile_settled_counted); a settling moves
--   the checkpoint to the snapshot xmin itself, so that a second one in
--   the transaction is refused (0039 marked it in pix.reconcile_settled,
--   which any role could reset); the digest of the fences (fences_seen,
--   0041) is written only as the catalog reads it (reconcile_fences_seen);
-- - the functions the triggers call resolve their tables through the
--   caller's search_path, where a temporary table (which any role may
--   create) comes first: a settling checked against a temporary
--   account_movements of the writer's. pix_secure pins every function of
--   the schema to the schema, pg_temp last;
-- - reconcile_reset() is the operator's (as the migrator): its EXECUTE is
--   revoked from PUBLIC.
-- The grants themselves (pix_secure) name the service role, which is the
-- deployment's (a role is cluster-wide, the schema is not): pixd migrate
-- calls pix_secure after every migration it applies, under the migration
-- lock, rather than setting default privileges: what a new table grants
-- is then this function's, revokes included (a default privilege can
-- grant, not except one table), whoever created the table.
--
-- The two triggers are created in one short transaction with a lock
-- timeout, as 0039 (a run holds the checkpoint's lock for its seconds).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION reconcile_fences(OUT down text[], OUT seen text, OUT seen_before_0064 text)
LANGUAGE sql STABLE AS $$
-- The fences of the books that are not in force, and the digest of their
-- rows (saga/reconcile/reconcile.sql, Fences, reads them from here; 0039,
-- 0041): every trigger the reconciliation's trust stands on, missing,
-- disabled or firing on a replica only, or calling another function than
-- its own. seen_before_0064 is the digest as the builds before this
-- migration compute it (without 0064's two triggers): a build rolled back
-- writes it.
WITH books AS (
    SELECT DISTINCT d.refobjid::regclass AS tbl FROM pg_rewrite r
    JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass
    JOIN pg_class c ON c.oid = d.refobjid AND c.relkind = 'r'
    WHERE r.ev_class = to_regclass('account_movements') AND d.refobjid <> r.ev_class),
expected (tbl, tgname, fn, since_0064) AS (
    SELECT tbl, (SELECT relname FROM pg_class WHERE oid = tbl)::text || suffix, 'refuse_movement_change', false
    FROM books CROSS JOIN (VALUES ('_append_only'), ('_no_delete')) AS s (suffix)
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
-- The digest of the fences is written only as the catalog reads it (by
-- this build's runs, or by one of before 0064): a writer that hid a fence
-- written since the last run (disabled, written past, enabled again) by
-- writing the digest it would read is refused.
CREATE OR REPLACE FUNCTION reconcile_fences_seen() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    f record;
BEGIN
    SELECT * INTO f FROM reconcile_fences();
    IF NEW.fences_seen IS NULL OR NEW.fences_seen NOT IN (f.seen, f.seen_before_0064) THEN
        RAISE EXCEPTION 'UPDATE of reconcile_checkpoint refused: fences_seen is the digest of the fences as the catalog reads them'
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'written by the reconciliation''s run alone (docs/design.md, "The reconciliation")';
    END IF;
    RETURN NEW;
END $$;
-- +goose StatementEnd
-- +goose StatementBegin
-- A settled sum inserted (an account whose history a run counts for the
-- first time: SetSettled) is its account's movements below the snapshot
-- xmin, read through the account's indexes: the run recounted them just
-- before, within its budget.
CREATE OR REPLACE FUNCTION reconcile_settled_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    x     xid8 := pg_snapshot_xmin(pg_current_snapshot());
    wrong text;
BEGIN
    SELECT n.account_id INTO wrong FROM new_sums n
    CROSS JOIN LATERAL (SELECT COALESCE(sum(m.amount_cents), 0) AS cents FROM account_movements m
                        WHERE m.account_id = n.account_id AND (m.xact_id IS NULL OR m.xact_id < x)) m
    WHERE n.settled_cents IS DISTINCT FROM m.cents
    LIMIT 1;
    IF wrong IS NOT NULL THEN
        RAISE EXCEPTION 'INSERT of reconcile_settled refused: the settled sum of % is not its movements below the snapshot xmin', wrong
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'counted by the reconciliation''s run alone (docs/design.md, "The reconciliation")';
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
-- +goose StatementBegin
-- 0039's fence, but a settling moves the checkpoint to its snapshot xmin
-- itself: a second settling in the transaction finds the checkpoint at x
-- and is refused, where 0039 trusted a setting the writer could reset.
-- The run's Advance writes the same settled_before after it.
CREATE OR REPLACE FUNCTION reconcile_settled_fence() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    x          xid8 := pg_snapshot_xmin(pg_current_snapshot());
    checkpoint xid8;
    wrong      text;
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'DELETE of reconcile_settled refused: a settled sum only advances with its checkpoint'
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'to count the books again from the start: SELECT reconcile_reset() (docs/design.md, "The reconciliation")';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM new_sums) THEN
        RETURN NULL; -- a statement that changed no sum
    END IF;
    SELECT settled_before INTO checkpoint FROM reconcile_checkpoint;
    IF current_setting('transaction_isolation') <> 'repeatable read' OR checkpoint IS NULL OR checkpoint >= x THEN
        RAISE EXCEPTION 'UPDATE of reconcile_settled refused: a settled sum only advances with its checkpoint, once a run'
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'settled by the reconciliation''s run alone, from the checkpoint to its snapshot xmin (docs/design.md, "The reconciliation")';
    END IF;
    SELECT COALESCE(o.account_id, n.account_id) INTO wrong
    FROM old_sums o
    FULL JOIN new_sums n ON n.account_id = o.account_id
    LEFT JOIN (SELECT account_id, sum(amount_cents) AS cents FROM account_movements
               WHERE xact_id >= checkpoint AND xact_id < x GROUP BY account_id) m ON m.account_id = o.account_id
    WHERE o.account_id IS NULL OR n.account_id IS NULL
       OR n.settled_cents - o.settled_cents IS DISTINCT FROM COALESCE(m.cents, 0)
    LIMIT 1;
    IF wrong IS NOT NULL THEN
        RAISE EXCEPTION 'UPDATE of reconcile_settled refused: the settled sum of % would not be its movements''', wrong
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'a settled sum only advances by its account''s movements from the checkpoint to the run''s snapshot xmin';
    END IF;
    UPDATE reconcile_checkpoint SET settled_before = x;
    RETURN NULL;
END $$;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
DROP TRIGGER IF EXISTS reconcile_settled_counted ON reconcile_settled;
CREATE TRIGGER reconcile_settled_counted AFTER INSERT ON reconcile_settled
    REFERENCING NEW TABLE AS new_sums
    FOR EACH STATEMENT EXECUTE FUNCTION reconcile_settled_counted();
DROP TRIGGER IF EXISTS reconcile_checkpoint_seen ON reconcile_checkpoint;
CREATE TRIGGER reconcile_checkpoint_seen BEFORE UPDATE OF fences_seen ON reconcile_checkpoint FOR EACH ROW
    WHEN (NEW.fences_seen IS DISTINCT FROM OLD.fences_seen)
    EXECUTE FUNCTION reconcile_fences_seen();
REVOKE EXECUTE ON FUNCTION reconcile_reset() FROM PUBLIC;
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
-- What the service role may do in the schema the migrations run in
-- (current_schema()), granted by its owner after every migration: pixd
-- migrate calls it (db.Migrate). Idempotent, and it writes a catalog row
-- only where something changes (a digest of the fences' rows, 0041, would
-- report every rewrite of a function's). service NULL: only the pins.
-- - every function of the schema pinned to it, pg_temp last: a trigger's
--   tables are the schema's, whatever the writer's search_path (but this
--   one, the owner's alone, which secures the schema its caller is in);
-- - the service: USAGE on the schema (no CREATE), SELECT, INSERT, UPDATE,
--   DELETE on its tables but the migrations' bookkeeping and the views
--   (SELECT only),
--   the settled sums (no DELETE) and the checkpoint (SELECT, UPDATE);
--   sequences' USAGE and SELECT; EXECUTE on the functions but
--   reconcile_reset and this one. Nothing else: no TRUNCATE, REFERENCES,
--   TRIGGER, and no grant option.
CREATE OR REPLACE FUNCTION pix_secure(service name) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    schema name := current_schema();
    pin    text := format('search_path=%s, pg_temp', quote_ident(current_schema()));
    f      regprocedure;
    t      record;
    want   text[];
    p      text;
BEGIN
    FOR f IN SELECT oid FROM pg_proc WHERE pronamespace = schema::regnamespace AND proname <> 'pix_secure'
                                       AND NOT (proconfig IS NOT NULL AND pin = ANY (proconfig)) LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, schema);
    END LOOP;
    IF service IS NULL OR service = current_user THEN
        RETURN;
    END IF;
    IF NOT has_schema_privilege(service, schema, 'USAGE') THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', schema, service);
    END IF;
    IF has_schema_privilege(service, schema, 'CREATE') THEN
        EXECUTE format('REVOKE CREATE ON SCHEMA %I FROM %I', schema, service);
    END IF;
    FOR t IN SELECT c.oid::regclass AS rel, c.relname, c.relkind FROM pg_class c
             WHERE c.relnamespace = schema::regnamespace AND c.relkind IN ('r', 'p', 'v', 'S') LOOP
        want := CASE
            WHEN t.relkind = 'S' THEN ARRAY['USAGE', 'SELECT']
            WHEN t.relkind = 'v' OR t.relname IN ('goose_db_version', 'migration_checksums', 'schema_migrations') THEN ARRAY['SELECT']
            WHEN t.relname = 'reconcile_checkpoint' THEN ARRAY['SELECT', 'UPDATE']
            WHEN t.relname = 'reconcile_settled' THEN ARRAY['SELECT', 'INSERT', 'UPDATE']
            ELSE ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE'] END;
        FOREACH p IN ARRAY CASE WHEN t.relkind = 'S' THEN ARRAY['USAGE', 'SELECT', 'UPDATE']
                                ELSE ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER'] END LOOP
            IF p = ANY (want) AND NOT EXISTS (SELECT 1 FROM aclexplode((SELECT relacl FROM pg_class WHERE oid = t.rel)) a
                                               WHERE a.grantee = service::regrole AND a.privilege_type = p) THEN
                EXECUTE format('GRANT %s ON %s TO %I', p, t.rel, service);
            ELSIF NOT p = ANY (want) AND EXISTS (SELECT 1 FROM aclexplode((SELECT relacl FROM pg_class WHERE oid = t.rel)) a
                                                 WHERE a.grantee = service::regrole AND a.privilege_type = p) THEN
                EXECUTE format('REVOKE %s ON %s FROM %I', p, t.rel, service);
            END IF;
        END LOOP;
    END LOOP;
    FOR f IN SELECT oid FROM pg_proc WHERE pronamespace = schema::regnamespace LOOP
        IF f IN ('reconcile_reset()'::regprocedure, 'pix_secure(name)'::regprocedure) THEN
            IF has_function_privilege(service, f, 'EXECUTE') THEN
                EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC, %I', f, service);
            END IF;
        ELSIF NOT has_function_privilege(service, f, 'EXECUTE') THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', f, service);
        END IF;
    END LOOP;
END $$;
-- +goose StatementEnd
REVOKE EXECUTE ON FUNCTION pix_secure(name) FROM PUBLIC;
