-- +goose Up
-- +goose NO TRANSACTION
-- Held money (docs/design.md, I11; db/holds.go): part of an account's
-- balance set aside, not spendable until the hold ends, released or
-- captured by the devolução it was held for. accounts.held_cents is the
-- sum of the account's active holds, changed only under the account's
-- row lock, in the transaction that starts or ends a hold; every debit
-- checks the available balance (balance_cents - held_cents) under the
-- same lock (db.LockAccountForDebit). The check below makes held money
-- that is not there impossible to commit, whatever the code does.
--
-- accounts is the busiest table there is (every credit and debit updates
-- a row of it): the column comes with a constant default (no rewrite),
-- the check NOT VALID (no scan under the ACCESS EXCLUSIVE lock), then
-- validated in a transaction of its own, which scans under a lock that
-- lets every read and write go on (SHARE UPDATE EXCLUSIVE). Each step has
-- a lock timeout, as 0014 and 0024: a wait behind a long transaction
-- fails instead of holding up the writes queued behind it, and the file
-- runs again from the start (every statement can run twice).
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE accounts ADD COLUMN IF NOT EXISTS held_cents bigint NOT NULL DEFAULT 0;
ALTER TABLE accounts DROP CONSTRAINT IF EXISTS accounts_held_within_balance;
ALTER TABLE accounts ADD CONSTRAINT accounts_held_within_balance
    CHECK (held_cents >= 0 AND balance_cents - held_cents >= 0) NOT VALID;
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE accounts VALIDATE CONSTRAINT accounts_held_within_balance;
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
-- One hold: money of an account set aside for a reason (kind), maybe for
-- one PIX received (end_to_end_id: what a devolução of that PIX would
-- return). ref is the caller's key: the same ref again is the same hold
-- (db.Hold is idempotent on it). A hold is active, then ends exactly once:
-- released (its money spendable again) or captured by the devolução it
-- was held for (refund_id; the hold's money leaves the account with that
-- devolução's debit, in its transaction). Holds are not movements of the
-- balance (they move no money, the devolução that captures one does), so
-- they carry no xact_id: the reconciliation compares every account's
-- held_cents with the sum of its active holds at every run, through the
-- partial index of the active ones, the live edge of a table that is
-- otherwise history.
CREATE TABLE IF NOT EXISTS pix_holds (
    id            uuid        PRIMARY KEY,
    ref           text        NOT NULL UNIQUE CHECK (char_length(ref) BETWEEN 1 AND 200),
    account_id    text        NOT NULL REFERENCES accounts (id),
    end_to_end_id text        REFERENCES pix_credits (end_to_end_id),
    kind          text        NOT NULL CHECK (kind ~ '^[a-z][a-z0-9_]{0,39}$'),
    reason        text        CHECK (char_length(reason) <= 140),
    -- What was asked, and whether less would do ("up to": what was
    -- available, or what the PIX had left to hold, if less).
    asked_cents   bigint      NOT NULL CHECK (asked_cents > 0),
    up_to         boolean     NOT NULL,
    amount_cents  bigint      NOT NULL CHECK (amount_cents > 0 AND amount_cents <= asked_cents),
    status        text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'released', 'captured')),
    -- The devolução that captured it.
    refund_id     text        UNIQUE REFERENCES pix_refunds (id),
    -- Why it was released, as the releaser said.
    end_reason    text        CHECK (char_length(end_reason) <= 140),
    created_at    timestamptz NOT NULL DEFAULT now(),
    ended_at      timestamptz,
    traceparent   text,
    CONSTRAINT pix_holds_whole_unless_up_to CHECK (up_to OR amount_cents = asked_cents),
    CONSTRAINT pix_holds_ended CHECK ((status = 'active') = (ended_at IS NULL)),
    CONSTRAINT pix_holds_captured_by_a_refund CHECK ((status = 'captured') = (refund_id IS NOT NULL))
);
-- An account's active holds (the reconciliation's sum), and a PIX's (what
-- a hold or a devolução of the PIX may still take).
CREATE INDEX IF NOT EXISTS pix_holds_active_account_idx ON pix_holds (account_id) INCLUDE (amount_cents)
    WHERE status = 'active';
CREATE INDEX IF NOT EXISTS pix_holds_active_pix_idx ON pix_holds (end_to_end_id) INCLUDE (amount_cents)
    WHERE status = 'active' AND end_to_end_id IS NOT NULL;
COMMIT;
-- +goose StatementEnd
