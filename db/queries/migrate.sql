-- The migration runner's own bookkeeping, beside goose's (db/migrate.go
-- runs these). The migrations themselves are the files of migrations/.
-- Every table named here is unqualified: it is the one in the schema the
-- migrations run in, the first of the connection's search_path, where goose
-- creates goose_db_version too.

-- name: LockKey
-- The key of the session-level advisory lock concurrent migrators (several
-- processes starting at once) take turns on, with goose's session locker:
-- one per schema migrated (its name hashed with $1, migrationLockKey), so
-- the lock guards the schema, and the migrators of other schemas (each
-- test's own) don't wait for it; every build since the lock was per schema
-- takes this one, so a build deployed beside the one before it waits for
-- it. goose tries the lock (pg_try_advisory_lock), never waits inside
-- pg_advisory_lock: a session waiting there holds a snapshot, which a
-- CREATE INDEX CONCURRENTLY run by the lock's holder would wait for (a
-- deadlock). The runner before goose waited on the plain key $1: a binary
-- of before goose does not exclude this one, and what it applies is
-- adopted (AdoptLegacy).
SELECT hashtextextended(current_schema(), $1)

-- name: TableExists
-- Whether table $1 is in the schema the migrations run in.
SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1)

-- name: CreateChecksumTable
-- The SHA-256 of each applied migration's SQL (its annotation lines left
-- out), recorded in the transaction that applied it (just before, for a
-- migration that runs without one), and the file's name: what goose does
-- not record, so that pixd migrate status can tell a file that changed
-- since it was applied, and name a version the running build doesn't have.
CREATE TABLE IF NOT EXISTS migration_checksums (
    version     bigint PRIMARY KEY,
    name        text        NOT NULL,
    sha256      text        NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now())

-- name: RecordChecksum
-- $1 version, $2 name, $3 sha256. A migration without a transaction that
-- runs again after a crash (its version was never recorded) records again.
INSERT INTO migration_checksums (version, name, sha256) VALUES ($1, $2, $3)
ON CONFLICT (version) DO UPDATE SET name = EXCLUDED.name, sha256 = EXCLUDED.sha256, recorded_at = now()

-- name: LegacyApplied
-- What the runner before goose applied, from its table (kept, written no
-- more by this one).
SELECT version::bigint, name, applied_at FROM schema_migrations ORDER BY version

-- name: AdoptLegacy
-- The takeover of one migration the runner before goose applied: goose's
-- row for it, with the time it was applied (goose's tstamp is a timestamp
-- without time zone, written by now() in our UTC sessions). $1 version,
-- $2 applied_at.
INSERT INTO goose_db_version (version_id, is_applied, tstamp) VALUES ($1, true, $2::timestamptz AT TIME ZONE 'UTC')

-- name: RecordLegacy
-- A migration goose applied, in the earlier runner's table too, for a
-- database that runner migrated: a binary of before goose then finds it
-- applied. $1 version, $2 name.
INSERT INTO schema_migrations (version, name) VALUES ($1, $2) ON CONFLICT (version) DO NOTHING

-- name: Applied
-- The applied migrations: goose's latest row of each version (goose
-- deletes the row of a migration it rolls back), with the checksum
-- recorded when it was applied, if any.
SELECT v.version_id, v.tstamp AT TIME ZONE 'UTC', c.name, c.sha256
FROM (SELECT DISTINCT ON (version_id) version_id, is_applied, tstamp FROM goose_db_version
      WHERE version_id > 0 ORDER BY version_id, id DESC) v
LEFT JOIN migration_checksums c ON c.version = v.version_id
WHERE v.is_applied
ORDER BY v.version_id

-- name: InvalidIndexes
-- The indexes that queries don't use: left by a concurrent build that
-- failed, or being built concurrently right now.
SELECT c.relname::text FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE NOT i.indisvalid AND n.nspname = current_schema()
ORDER BY 1

-- name: CanSecure
-- Whether the schema has pix_secure (migration 0064): a schema whose
-- migrations do not make it (a test's own files) is left as it is.
SELECT to_regprocedure('pix_secure(name)') IS NOT NULL

-- name: Secure
-- The schema secured once migrated (migration 0064): its functions pinned
-- to it, and the service role $1 granted what the service needs (NULL:
-- the pins only).
SELECT pix_secure($1::name)
