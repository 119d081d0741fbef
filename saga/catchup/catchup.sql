-- The PSP catch-up's covered window (store.go; the table is
-- db/migrations/0015_psp_catchup.sql).

-- name: CoveredUntil
-- The end of the last window the catch-up covered; no row: none yet.
SELECT covered_until FROM psp_catchup

-- name: Now
-- The database's clock: every worker's catch-up window ends by this one
-- clock, never by its own (a worker whose clock runs ahead would record a
-- covered end in the future and skip what the PSP receives meanwhile).
SELECT now()

-- name: StartCovering
-- The first window's end, when no run has recorded one and it is not in
-- the database's future: a run that raced this one and recorded another
-- end first wins (no row returned). The same end recorded already (a retry
-- whose first try committed) is returned, as moved.
INSERT INTO psp_catchup (covered_until) SELECT $1::timestamptz WHERE $1::timestamptz <= now()
ON CONFLICT (id) DO UPDATE SET covered_until = psp_catchup.covered_until
WHERE psp_catchup.covered_until = EXCLUDED.covered_until
RETURNING covered_until

-- name: AdvanceCovered
-- Moves the covered window's end from $1, the value the run started from,
-- to $2, only forwards and never past the database's clock. A run whose
-- start was moved meanwhile (a late or stale run) changes nothing (no row
-- returned). An end at $2 already (a retry whose first try committed) is
-- returned, as moved, and left as it is.
UPDATE psp_catchup SET covered_until = $2, updated_at = CASE WHEN covered_until = $2 THEN updated_at ELSE now() END
WHERE (covered_until = $1 AND $2 > covered_until AND $2 <= now()) OR covered_until = $2
RETURNING covered_until
