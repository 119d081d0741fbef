-- The items of the DICT's lists the lister quarantined (pix_med_quarantine,
-- migration 0047; lister.go, quarantine.go): cleared when a later listing
-- takes the item in, or by an operator.

-- name: Clear
-- The quarantine of an item the lister has just taken in (its doors
-- accepted the copy listed): $1 kind, $2 its DICT id (as Quarantine records
-- it), $3 the copy's LastModified. Only the rows of that copy or an earlier
-- one: a lister late with an older copy never clears the quarantine of a
-- newer one. From the primary key.
DELETE FROM pix_med_quarantine WHERE kind = $1 AND dict_id = $2 AND dict_modified_at <= $3

-- name: List
-- A page of the quarantined items in the primary key's order: $1, $2, $3
-- the key (kind, dict_id, dict_modified_at) of the last row of the page
-- before (NULL, NULL, NULL: from the first), $4 at most.
SELECT kind, dict_id, dict_modified_at, reason, first_listed_at, last_listed_at FROM pix_med_quarantine
WHERE (kind, dict_id, dict_modified_at) > (COALESCE($1::text, ''), COALESCE($2::text, ''), COALESCE($3::timestamptz, '-infinity'))
ORDER BY kind, dict_id, dict_modified_at LIMIT $4

-- name: Resolve
-- An operator's clear of an item's quarantine, once decided by hand: $1
-- kind, $2 its DICT id as listed, $3 the latest LastModified decided (NULL:
-- every one). The LastModified of each row cleared. From the primary key.
DELETE FROM pix_med_quarantine WHERE kind = $1 AND dict_id = $2 AND dict_modified_at <= COALESCE($3::timestamptz, 'infinity')
RETURNING dict_modified_at

-- name: Count
-- The gauge of the items quarantined and not cleared, by kind
-- (pix_med_dict_items_quarantined, PixMEDDICTItemQuarantined): the table
-- whole, which holds only those (a row leaves once cleared).
SELECT count(*) FILTER (WHERE kind = 'report'), count(*) FILTER (WHERE kind = 'refund') FROM pix_med_quarantine
