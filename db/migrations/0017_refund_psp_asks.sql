-- +goose Up
-- How many times the saga has handed the devolução's PUT to the network
-- (MarkAsked counts each one, before it goes out). The PSP's refusal
-- (0016) proves that the PSP never took the devolução only while at most
-- one PUT may have reached it, the refused one: an overlapping attempt or
-- run that asked again may have made the devolução and lost its answer.
-- So a refusal is recorded, stands and is reversed on only while
-- psp_asks <= 1: a refusal recorded late, after another ask, or followed
-- by one, no longer does (a human looks).
ALTER TABLE pix_refunds ADD COLUMN psp_asks integer NOT NULL DEFAULT 0;

-- A refund asked before this migration (psp_asked_at: its first ask, or
-- 0012's mark of a refund that may have been sent) counts one ask: the
-- only one known. One asked again since is not told apart; its next ask
-- counts two. A refusal recorded before asks were counted may have been
-- recorded late, after another PUT (the very case this column fences): it
-- counts two, so that it does not stand and a human looks, never a
-- reversal on a guess.
UPDATE pix_refunds SET psp_asks = CASE WHEN psp_refused_at IS NULL THEN 1 ELSE 2 END
WHERE psp_asked_at IS NOT NULL;
