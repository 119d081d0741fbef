-- +goose Up
-- Refunds, after their first release (0009): the window counts from the
-- PIX's receipt, and the PSP's notices are counted.

-- When the PIX was first received (its inbox row's received_at), kept with
-- the credit, which outlives the inbox row: the refund window counts from
-- it, not from the credit, which a failed and re-driven PIX may get days
-- later. NULL for credits recorded before this migration (their credited_at
-- stands in). A column without a default: no table rewrite.
ALTER TABLE pix_credits ADD COLUMN IF NOT EXISTS received_at timestamptz;

-- psp_notice is the latest outcome the PSP's webhook announced, kept on a
-- final refund too, where one that contradicts the status is reported by
-- the reconciliation. notices counts the notices on the open refund: the
-- dispatcher's records of a claim are fenced by it, so a notice that
-- arrives meanwhile is signalled, never overwritten; signalled_notices is
-- how many were signalled to the refund's run. Constant defaults: no table
-- rewrite.
ALTER TABLE pix_refunds
    ADD COLUMN IF NOT EXISTS notices           integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS signalled_notices integer NOT NULL DEFAULT 0;
