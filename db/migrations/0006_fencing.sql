-- +goose Up
-- Fencing of stale actors, and the charge rule.
--
-- drive numbers the drives of an inbox row: 1 on arrival, +1 at each
-- re-drive (a redelivery of a failed row, an admin re-drive). Every write
-- that a workflow run or a dispatcher decided on (mark failed, record an
-- attempt, record a dispatch) names the drive it belongs to and changes
-- nothing once the row has moved on to a newer drive: a retried activity
-- whose first try committed, or a dispatcher that is late, can't undo what
-- came after it. A constant default: no table rewrite. The checks are added
-- NOT VALID: existing rows hold the default 1 or NULLs, which pass them, and
-- a validation would scan the busy tables under this migration's lock;
-- every row written from now on is checked.
ALTER TABLE inbox_messages ADD COLUMN drive integer NOT NULL DEFAULT 1;
ALTER TABLE inbox_messages ADD CONSTRAINT inbox_messages_drive_positive CHECK (drive >= 1) NOT VALID;

-- What a credit did to the charge its PIX named (API Pix txid): concluded
-- it, or why not. The PIX is credited either way; a charge is concluded
-- only by a PIX credited to the charge's own account with the amount the
-- charge expects. Kept with the credit, which outlives the inbox row.
ALTER TABLE pix_credits
    ADD COLUMN charge_txid    text,
    ADD COLUMN charge_outcome text,
    ADD CONSTRAINT pix_credits_charge_outcome
        CHECK (charge_outcome IN ('concluded', 'other_account', 'amount_mismatch', 'not_open', 'unknown_charge')) NOT VALID,
    ADD CONSTRAINT pix_credits_charge CHECK ((charge_txid IS NULL) = (charge_outcome IS NULL)) NOT VALID;

-- The PIX that concluded the charge.
ALTER TABLE pix_charges ADD COLUMN concluded_by text;
