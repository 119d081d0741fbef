-- The items of the DICT's lists the lister quarantined (pix_med_quarantine,
-- migration 0047; lister.go, quarantine.go): cleared when a later listing
-- takes the item in, or by an operator.
--
-- Lock order, one for every transaction here: a quarantined copy's row
-- (pix_med_quarantine) first, then the reports (pix_med_reports, by id),
-- then a report's stop row, then the core's locks (med.sql Lock). A stop
-- (Store.NoteProblemOn) takes its copy's row (Held) before its report's
-- (decideAfter); a clear (Clear, Resolve) deletes its rows, then locks
-- the reports it wakes in id order (Wake). The stop once took the report
-- first: a stop and a clear at once deadlocked (40P01, retried by InTx;
-- attack review issue 37 LOW-1).

-- name: Clear
-- The quarantine of an item the lister has just taken in (its doors
-- accepted the copy listed): $1 kind, $2 its DICT id (as Quarantine records
-- it), $3 the copy's LastModified. Only the rows of that copy or an earlier
-- one: a lister late with an older copy never clears the quarantine of a
-- newer one. Never a row of an item whose LastModified could not be read
-- (its reason dict_malformed...LastModified: recorded where the walk met
-- it, at or before its real instant, so a copy modified after that row's
-- instant may still be older than the malformed one): an operator's only
-- (Resolve). The LastModified of each row cleared (Wake). From the
-- primary key.
DELETE FROM pix_med_quarantine WHERE kind = $1 AND dict_id = $2 AND dict_modified_at <= $3
AND reason NOT LIKE 'dict\_malformed%LastModified'
RETURNING dict_modified_at

-- name: Stop
-- A report's run stopped at the DICT on the quarantined item $2 kind, $3
-- DICT id (as Quarantine records it), $4 LastModified: $1 the report, $5
-- its generation once the stop was noted (pix_med_quarantine_stops,
-- migration 0059). A report's later stop on another item (or another copy)
-- replaces it. From the primary key.
INSERT INTO pix_med_quarantine_stops (report_id, kind, dict_id, dict_modified_at, gen) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (report_id) DO UPDATE SET kind = EXCLUDED.kind, dict_id = EXCLUDED.dict_id,
    dict_modified_at = EXCLUDED.dict_modified_at, gen = EXCLUDED.gen

-- name: Held
-- In the transaction of a report's stop on the quarantined copy $1 kind,
-- $2 DICT id (as Quarantine records it), $3 LastModified
-- (Store.NoteProblemOn), before the report's lock (the lock order): the
-- copy is still quarantined, kept so until the stop commits. A clear
-- (Clear, Resolve) committed before finds no row: the stop is not
-- recorded, the step is decided again. One uncommitted is waited for,
-- the report not yet locked, so its Wake locks the report freely, and no
-- row is found after. One after waits for the stop's commit, and its Wake
-- then finds the stop. From the primary key.
SELECT 1 FROM pix_med_quarantine WHERE kind = $1 AND dict_id = $2 AND dict_modified_at = $3
FOR KEY SHARE

-- name: Wake
-- In the transaction of a clear (Clear, Resolve) of $1 kind, $2 DICT id,
-- after its delete of the copies of LastModified $3 (each row cleared):
-- the open reports whose runs stopped on one of those copies and nothing
-- moved since (still at the generation their stop left: a report that
-- moved on has a run deciding on it already) have their generation
-- bumped, which ends the run's stopped wait (workflow.go, waits.stopped);
-- their ids, for the signal after the commit. A run stopped on a newer
-- copy than those cleared is not among them. The reports are locked in
-- id order (stopped), after the copies' rows (the lock order above): a
-- stop on a copy deleted here waits at Held without its report's lock,
-- and one that got Held first committed before the delete. Their stop
-- rows stay, stale (one per report, replaced at its next stop), read and
-- never locked here. The stops from the item's index, the reports from
-- their primary key.
WITH stopped AS (
    SELECT r.id FROM pix_med_reports r JOIN pix_med_quarantine_stops s ON r.id = s.report_id
    WHERE s.kind = $1 AND s.dict_id = $2 AND s.dict_modified_at = ANY ($3::timestamptz[])
      AND r.gen = s.gen AND r.status NOT IN ('ended', 'not_ours')
    ORDER BY r.id
    FOR UPDATE OF r)
UPDATE pix_med_reports r SET gen = r.gen + 1, updated_at = now()
FROM stopped
WHERE r.id = stopped.id
RETURNING r.id

-- name: RefundsFrom
-- The refund requests quarantined and not cleared that could be a
-- report's request, which the 72 h expiry never releases past
-- (Activities.ExpireRequest): each modified at or after $1 (the report's
-- RequestsFrom), and each whose LastModified could not be read (recorded
-- where the walk met it, its real instant unknown). Its reason only when
-- there is one. The table holds only the items not cleared (a handful).
SELECT dict_id, reason FROM pix_med_quarantine
WHERE kind = 'refund' AND (dict_modified_at >= $1 OR reason LIKE 'dict\_malformed%LastModified')
ORDER BY dict_modified_at LIMIT 1

-- name: List
-- A page of the quarantined items in the primary key's order: $1, $2, $3
-- the key (kind, dict_id, dict_modified_at) of the last row of the page
-- before (NULL, NULL, NULL: from the first), $4 at most.
SELECT kind, dict_id, dict_modified_at, reason, first_listed_at, last_listed_at FROM pix_med_quarantine
WHERE (kind, dict_id, dict_modified_at) > (COALESCE($1::text, ''), COALESCE($2::text, ''), COALESCE($3::timestamptz, '-infinity'))
ORDER BY kind, dict_id, dict_modified_at LIMIT $4

-- name: Resolve
-- An operator's clear of an item's quarantine, once decided by hand: $1
-- kind, $2 its DICT id as listed, $3 the LastModified of the copy decided,
-- as listed. Only when that copy is quarantined, and only it and the
-- placed copies before it: never a copy quarantined after the operator
-- looked (a newer LastModified), nor one whose LastModified could not be
-- read (dict_malformed...LastModified: recorded where the walk met it, it
-- may be newer than the copy decided) unless it is the one named. The
-- LastModified of each row cleared. From the primary key.
DELETE FROM pix_med_quarantine WHERE kind = $1 AND dict_id = $2 AND dict_modified_at <= $3
AND (dict_modified_at = $3 OR reason NOT LIKE 'dict\_malformed%LastModified')
AND EXISTS (SELECT 1 FROM pix_med_quarantine WHERE kind = $1 AND dict_id = $2 AND dict_modified_at = $3)
RETURNING dict_modified_at

-- name: Count
-- The gauge of the items quarantined and not cleared, by kind
-- (pix_med_dict_items_quarantined, PixMEDDICTItemQuarantined): the table
-- whole, which holds only those (a row leaves once cleared).
SELECT count(*) FILTER (WHERE kind = 'report'), count(*) FILTER (WHERE kind = 'refund') FROM pix_med_quarantine
