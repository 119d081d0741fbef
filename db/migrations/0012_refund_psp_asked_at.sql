-- +goose Up
-- When the saga first sent the devolução to the PSP (recorded before the
-- PUT, in a statement of its own): once set, a later refusal by the PSP can
-- no longer prove that the PSP never took it (an earlier PUT may have
-- reached it and lost its answer), and reversing on it needs a human.
-- IF NOT EXISTS: a development database may have it already (an unreleased
-- 0011 carried it for a while).
ALTER TABLE pix_refunds ADD COLUMN IF NOT EXISTS psp_asked_at timestamptz;

-- A refund that existed before this migration may have been sent already
-- (its saga ran without recording it): it counts as asked, so that a
-- refusal of its next PUT never reverses it by itself.
UPDATE pix_refunds SET psp_asked_at = COALESCE(dispatched_at, created_at) WHERE psp_asked_at IS NULL;
