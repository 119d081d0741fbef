-- The database's two roles (docs/operations.md, "The database's roles"),
-- made by a superuser (or a role with CREATEROLE that owns the database)
-- in the database pixd uses: the migrator pix_migrator, which owns the
-- database, its schema public and every object in it, and runs pixd
-- migrate; and the service role pix_service, which owns nothing and is
-- granted what the api and the worker need by pixd migrate itself
-- (migration 0064's pix_secure), after every migration. Idempotent: run
-- again to rotate a password, or after a restore made the objects
-- another role's.
--
--   psql "$SUPERUSER_URL" -v ON_ERROR_STOP=1 \
--     -v migrator_password="$MIGRATOR_PASSWORD" -v service_password="$SERVICE_PASSWORD" -f roles.sql
--
-- An empty password sets none (a cluster that trusts its clients: make
-- run, the fault suite).
SELECT pg_advisory_lock(7368237003); -- two runs at once on one server
SELECT 'CREATE ROLE pix_migrator LOGIN' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pix_migrator') \gexec
SELECT 'CREATE ROLE pix_service LOGIN' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pix_service') \gexec
-- Neither may become the other, nor anything more.
ALTER ROLE pix_migrator NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
ALTER ROLE pix_service NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
SELECT format('ALTER ROLE pix_migrator PASSWORD %L', :'migrator_password') WHERE :'migrator_password' <> '' \gexec
SELECT format('ALTER ROLE pix_service PASSWORD %L', :'service_password') WHERE :'service_password' <> '' \gexec
SELECT format('ALTER DATABASE %I OWNER TO pix_migrator', current_database()) \gexec
ALTER SCHEMA public OWNER TO pix_migrator;
-- No role but the migrator makes objects in it (a cluster of before
-- PostgreSQL 15, upgraded, grants PUBLIC CREATE on public): pixd migrate
-- refuses a service role that may.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
-- A database migrated as another role before: its objects become the
-- migrator's (a table's own sequences and indexes follow it).
SELECT format('ALTER %s %s OWNER TO pix_migrator', CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, c.oid::regclass)
FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'S')
  AND c.relowner <> 'pix_migrator'::regrole
  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')) \gexec
SELECT format('ALTER FUNCTION %s OWNER TO pix_migrator', p.oid::regprocedure)
FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace AND p.proowner <> 'pix_migrator'::regrole \gexec
SELECT pg_advisory_unlock(7368237003);
