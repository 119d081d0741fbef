-- +goose Up
-- +goose NO TRANSACTION
-- pix_secure (0064) grants per table (docs/operations.md, "The database's
-- roles"): DELETE only on the tables the service deletes from (the
-- service's SQL: the retention's inbox_messages, outbox_events and
-- idempotency_keys; an Idempotency-Key's lock released,
-- idempotency_keys; the MED's pix_med_refund_requests and
-- pix_med_quarantine; the scheduled PIX's pix_scheduled_cancel_wakes),
-- not on accounts (an account with no movements deleted and inserted again
-- would get another opening balance past accounts_opening_fixed) nor on
-- the books (refused by their triggers all the same) nor any other. A new
-- table the service deletes from is added to the list here, by a
-- migration that replaces this function (docs/extending.md).
-- And what the schema grants PUBLIC (every role, the service's included)
-- on what it secures is revoked: a table's, a view's, a sequence's grants
-- to PUBLIC, and EXECUTE on the functions, which PostgreSQL grants PUBLIC
-- by default (the service is granted it by name). Materialized views and
-- foreign tables (none yet) are read only.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION pix_secure(service name) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    schema name := current_schema();
    pin    text := format('search_path=%s, pg_temp', quote_ident(current_schema()));
    f      regprocedure;
    t      record;
    want   text[];
    p      text;
    books  oid[] := ARRAY(SELECT d.refobjid FROM pg_rewrite r
                          JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass
                          WHERE r.ev_class = to_regclass('account_movements') AND d.refobjid <> r.ev_class);
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
        EXECUTE format('REVOKE CREATE ON SCHEMA %I FROM PUBLIC, %I', schema, service);
    END IF;
    FOR t IN SELECT c.oid::regclass AS rel, c.relname, c.relkind, c.relacl FROM pg_class c
             WHERE c.relnamespace = schema::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') LOOP
        want := CASE
            WHEN t.relkind = 'S' THEN ARRAY['USAGE', 'SELECT']
            WHEN t.relkind IN ('v', 'm', 'f') OR t.relname IN ('goose_db_version', 'migration_checksums', 'schema_migrations') THEN ARRAY['SELECT']
            WHEN t.relname = 'reconcile_checkpoint' THEN ARRAY['SELECT', 'UPDATE']
            WHEN t.relname IN ('inbox_messages', 'outbox_events', 'idempotency_keys', 'pix_med_refund_requests',
                               'pix_med_quarantine', 'pix_scheduled_cancel_wakes') AND NOT t.rel::oid = ANY (books)
                THEN ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE']
            ELSE ARRAY['SELECT', 'INSERT', 'UPDATE'] END;
        FOREACH p IN ARRAY CASE WHEN t.relkind = 'S' THEN ARRAY['USAGE', 'SELECT', 'UPDATE']
                                ELSE ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER'] END LOOP
            IF p = ANY (want) AND NOT EXISTS (SELECT 1 FROM aclexplode(t.relacl) a
                                               WHERE a.grantee = service::regrole AND a.privilege_type = p) THEN
                EXECUTE format('GRANT %s ON %s TO %I', p, t.rel, service);
            ELSIF NOT p = ANY (want) AND EXISTS (SELECT 1 FROM aclexplode(t.relacl) a
                                                 WHERE a.grantee = service::regrole AND a.privilege_type = p) THEN
                EXECUTE format('REVOKE %s ON %s FROM %I', p, t.rel, service);
            END IF;
        END LOOP;
        IF EXISTS (SELECT 1 FROM aclexplode(t.relacl) a WHERE a.grantee = 0) THEN
            EXECUTE format('REVOKE ALL ON %s FROM PUBLIC', t.rel);
        END IF;
    END LOOP;
    FOR f IN SELECT oid FROM pg_proc WHERE pronamespace = schema::regnamespace LOOP
        IF EXISTS (SELECT 1 FROM pg_proc x CROSS JOIN aclexplode(COALESCE(x.proacl, acldefault('f', x.proowner))) a
                   WHERE x.oid = f AND a.grantee = 0) THEN
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
        END IF;
        IF f IN ('reconcile_reset()'::regprocedure, 'pix_secure(name)'::regprocedure) THEN
            IF has_function_privilege(service, f, 'EXECUTE') THEN
                EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM %I', f, service);
            END IF;
        ELSIF NOT has_function_privilege(service, f, 'EXECUTE') THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', f, service);
        END IF;
    END LOOP;
END $$;
-- +goose StatementEnd
REVOKE EXECUTE ON FUNCTION pix_secure(name) FROM PUBLIC;
