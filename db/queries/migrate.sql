-- The migration runner's own bookkeeping: db/migrate.go runs these. The
-- migrations themselves are the files of migrations/.

-- name: Lock
-- Concurrent migrators (several processes starting at once) take turns on
-- one advisory lock. $1 migrationLockKey.
SELECT pg_advisory_lock($1)

-- name: Unlock
SELECT pg_advisory_unlock($1)

-- name: CreateTable
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now())

-- name: IsApplied
SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)

-- name: RecordApplied
-- $1 version, $2 name.
INSERT INTO schema_migrations (version, name) VALUES ($1, $2)
