-- +goose Up
-- +goose NO TRANSACTION
-- Holds that fill from later credits (db.NewHold.FillFromCredits; MED,
-- Resolução BCB 103/2021: the credited participant holds what the account
-- has of the PIX reported, then the account's next credits until the
-- PIX's amount is held). Such a hold takes what is available when it is
-- made, possibly nothing, and every later PIX credited to its account
-- (db.Store.Credit) adds to it, in the credit's transaction and under the
-- account lock the credit already holds, until it holds fill_to_cents.
--
-- fill_to_cents is what it fills to (NULL: a hold that does not fill):
-- what was asked, or, for a hold of a PIX, what the PIX had left to hold
-- when it was made, if less. It is reserved of the PIX at once (a
-- devolução or another hold of the PIX counts it, not what is held yet:
-- queries/refunds.sql TakenCents), so that no fill can take the PIX's
-- holds and devoluções past its credit (I9, I11), whichever comes first.
-- Only a filling hold may hold 0.
--
-- pix_holds is small (the holds, not the PIX) and no credit of the
-- release before this one touches it, so each step is a short transaction
-- with a lock timeout, as 0030 (the file runs again from the start if one
-- fails: every statement can run twice). From this release on every
-- credit reads pix_holds (the probe, 0037): a later migration that locks
-- it ACCESS EXCLUSIVE holds up the credits, and is written as one on
-- accounts is (docs/extending.md, "A column on busy tables").
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_holds ADD COLUMN IF NOT EXISTS fill_to_cents bigint;
-- 0030's amount_cents > 0 becomes: more than 0 unless the hold fills.
-- (0030's check on amount_cents, named by PostgreSQL: pix_holds_check,
-- as it names two columns.)
ALTER TABLE pix_holds DROP CONSTRAINT IF EXISTS pix_holds_check;
ALTER TABLE pix_holds DROP CONSTRAINT IF EXISTS pix_holds_amount_within_asked;
ALTER TABLE pix_holds ADD CONSTRAINT pix_holds_amount_within_asked
    CHECK (amount_cents >= 0 AND amount_cents <= asked_cents AND (amount_cents > 0 OR fill_to_cents IS NOT NULL)) NOT VALID;
-- A filling hold is an "up to" hold (it holds less than asked until it
-- fills), and never holds more than it fills to.
ALTER TABLE pix_holds DROP CONSTRAINT IF EXISTS pix_holds_fills_up_to;
ALTER TABLE pix_holds ADD CONSTRAINT pix_holds_fills_up_to
    CHECK (fill_to_cents IS NULL OR (up_to AND fill_to_cents BETWEEN 1 AND asked_cents AND amount_cents <= fill_to_cents)) NOT VALID;
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_holds VALIDATE CONSTRAINT pix_holds_amount_within_asked;
ALTER TABLE pix_holds VALIDATE CONSTRAINT pix_holds_fills_up_to;
COMMIT;
-- +goose StatementEnd
-- What each inflow added to each hold: the audit of the fills, and their
-- net. A hold fills from every money that comes back to its account
-- (docs/design.md, I11): a PIX credited (source_kind 'credit', source_id
-- its end_to_end_id), a rejected transfer refunded ('transfer_refund',
-- the transfer's id), a devolução reversed ('refund_reversal', the
-- refund's id); one fill per hold and source (the source is made once,
-- and its fills with it, in its transaction: db.FillHolds; a second would
-- fail the transaction, not fill twice). amount_after_cents is the hold's
-- amount after the fill. Not a movement of the balance (the inflow is; a
-- fill moves none), like the holds: the reconciliation compares
-- held_cents with the active holds.
--
-- A table of its own transaction (docs/extending.md, "A column on busy
-- tables"), with no foreign key to the sources: a reference to
-- pix_credits would take its SHARE ROW EXCLUSIVE lock, which stalls every
-- credit while it waits, and there is no one table of the sources to
-- reference; the row is written in its source's own transaction, which
-- makes the source. The key to pix_holds locks only pix_holds, which no
-- credit writes before this release.
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
CREATE TABLE IF NOT EXISTS pix_hold_fills (
    hold_id            uuid        NOT NULL REFERENCES pix_holds (id),
    source_kind        text        NOT NULL CHECK (source_kind IN ('credit', 'transfer_refund', 'refund_reversal')),
    source_id          text        NOT NULL,
    amount_cents       bigint      NOT NULL CHECK (amount_cents > 0),
    amount_after_cents bigint      NOT NULL CHECK (amount_after_cents >= amount_cents),
    filled_at          timestamptz NOT NULL,
    PRIMARY KEY (hold_id, source_kind, source_id)
);
-- The fills of a source (what a PIX received, a refund, a reversal went
-- to). Built with the table, empty and new, which nothing else writes yet.
CREATE INDEX IF NOT EXISTS pix_hold_fills_source_idx ON pix_hold_fills (source_kind, source_id);
COMMIT;
-- +goose StatementEnd
