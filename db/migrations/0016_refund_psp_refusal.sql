-- +goose Up
-- The PSP's refusal of a devolução (400 PixDevolucaoInvalida to the first
-- PUT that ever reached it, and no record of it), recorded when the saga
-- decides on it, with what the PSP said. A later run (after one that failed
-- while looking again, its GET refused for a while) goes straight to that
-- second look instead of asking again: a new PUT would be refused again,
-- and, no longer the first ask, could never lead to the reversal. Written
-- only while nothing says the PSP took the devolução, and acted on only
-- while that still holds (RefusalStands, under the refund's lock).
ALTER TABLE pix_refunds
    ADD COLUMN psp_refused_at timestamptz,
    ADD COLUMN psp_refusal text;
