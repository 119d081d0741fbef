-- The PSP catch-up's covered window (db/catchup.go; the table is
-- migrations/0015_psp_catchup.sql).

-- name: CoveredUntil
-- The end of the last window the catch-up covered; no row: none yet.
SELECT covered_until FROM psp_catchup

-- name: StartCovering
-- The first window's end, when no run has recorded one: a run that raced
-- this one and recorded its end first wins (no row returned).
INSERT INTO psp_catchup (covered_until) VALUES ($1)
ON CONFLICT (id) DO NOTHING
RETURNING covered_until

-- name: AdvanceCovered
-- Moves the covered window's end from $1, the value the run started from,
-- to $2, only forwards. A run whose start was moved meanwhile (a late or
-- stale run) changes nothing (no row returned).
UPDATE psp_catchup SET covered_until = $2, updated_at = now()
WHERE covered_until = $1 AND $2 > covered_until
RETURNING covered_until
