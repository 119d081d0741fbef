-- The covered windows of the scheduled listers (covered.go; the table is
-- db/migrations/0042_covered_windows.sql), each by its name ($1). Their
-- clock is the database's (db.Now, db/queries/clock.sql).

-- name: CoveredUntil
-- The end of the last window the lister covered; no row: none yet.
SELECT covered_until FROM covered_windows WHERE name = $1

-- name: StartCovering
-- The first window's end, when no run has recorded one and it is not in
-- the database's future: a run that raced this one and recorded another
-- end first wins (no row returned). The same end recorded already (a retry
-- whose first try committed) is returned, as moved.
INSERT INTO covered_windows (name, covered_until) SELECT $1, $2::timestamptz WHERE $2::timestamptz <= now()
ON CONFLICT (name) DO UPDATE SET covered_until = covered_windows.covered_until
WHERE covered_windows.covered_until = EXCLUDED.covered_until
RETURNING covered_until

-- name: AdvanceCovered
-- Moves the covered end from $2, the value the run started from, to $3,
-- only forwards and never past the database's clock. A run whose start was
-- moved meanwhile (a late or stale run) changes nothing (no row returned).
-- An end at $3 already (a retry whose first try committed) is returned, as
-- moved, and left as it is.
UPDATE covered_windows SET covered_until = $3, updated_at = CASE WHEN covered_until = $3 THEN updated_at ELSE now() END
WHERE name = $1 AND ((covered_until = $2 AND $3 > covered_until AND $3 <= now()) OR covered_until = $3)
RETURNING covered_until

-- name: Behind
-- How far the covered end is behind the database's clock, in seconds (a
-- lister's lag, read at each scrape); no row: none covered yet.
SELECT extract(epoch FROM now() - covered_until)::float8 FROM covered_windows WHERE name = $1
