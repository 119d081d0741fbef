-- +goose Up
-- The items of the DICT's lists the MED saga's doors refused for good
-- (saga/med, the lister: docs/med.md, "The DICT's lister"): an infraction
-- report or a refund request that contradicts the one received, that the
-- table can't hold, or whose report the DICT refuses to read. The lister
-- records it here, counts it (pix_med_dict_items_quarantined_total) and
-- moves its window past it, so that one item never holds back the ones
-- after it; a later copy (modified since) is handed to the doors again. A
-- row per item and LastModified listed; no free text of the DICT's: the
-- item's id, its LastModified and the code of the refusal, for an operator
-- to read the item at the DICT (docs/runbooks.md,
-- #pixmeddictitemquarantined). A new table: the file's one transaction.
CREATE TABLE pix_med_quarantine (
    kind             text NOT NULL CHECK (kind IN ('report', 'refund')),
    dict_id          text NOT NULL CHECK (length(dict_id) <= 64),
    dict_modified_at timestamptz NOT NULL,
    reason           text NOT NULL CHECK (length(reason) <= 100),
    first_listed_at  timestamptz NOT NULL DEFAULT now(),
    last_listed_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, dict_id, dict_modified_at)
);
