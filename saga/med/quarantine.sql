-- The items of the DICT's lists the lister quarantined (pix_med_quarantine,
-- migration 0047; lister.go, quarantine.go): cleared when a later listing
-- takes the item in, or by an operator.

-- name: Clear
-- The quarantine of an item the lister has just taken in (its doors
-- accepted the copy listed): $1 kind, $2 its DICT id (as Quarantine records
-- it), $3 the copy's LastModified. Only the rows of that copy or an earlier
-- one: a lister late with an older copy never clears the quarantine of a
-- newer one. Never a row of an item whose LastModified could not be read
-- (its reason dict_malformed...LastModified: recorded where the walk met
-- it, at or before its real instant, so a copy modified after that row's
-- instant may still be older than the malformed one): an operator's only
-- (Resolve). From the primary key.
DELETE FROM pix_med_quarantine WHERE kind = $1 AND dict_id = $2 AND dict_modified_at <= $3
AND reason NOT LIKE 'dict\_malformed%LastModified'

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
