-- +goose Up
-- +goose NO TRANSACTION
-- An account's opening balance never changes once opened (I2; docs/
-- design.md, "The reconciliation"): the books balance when every balance
-- is its opening balance plus its movements, so an opening balance
-- changed with its balance (UPDATE accounts SET opening_balance_cents =
-- opening_balance_cents + x, balance_cents = balance_cents + x) made money
-- that no check could see, the recount in full included: the movements
-- are append-only (0024), the opening balance was not. A trigger refuses
-- the change; money arrives as a movement. It fires only on an UPDATE that
-- names the column: the balance's updates (every credit, every debit) do
-- not call it. Each run checks it is in force (queries/reconcile.sql,
-- Fences). In a transaction with a lock timeout, as 0014: creating a
-- trigger takes the busy accounts table's SHARE ROW EXCLUSIVE lock, which
-- waits behind the writes in progress and holds the next ones.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION refuse_opening_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'an account''s opening balance never changes: UPDATE of % refused', OLD.id
        USING ERRCODE = 'integrity_constraint_violation',
              HINT = 'money arrives as a movement of its own (docs/design.md, I2)';
END $$;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
DROP TRIGGER IF EXISTS accounts_opening_fixed ON accounts;
CREATE TRIGGER accounts_opening_fixed BEFORE UPDATE OF opening_balance_cents ON accounts FOR EACH ROW
    WHEN (OLD.opening_balance_cents IS DISTINCT FROM NEW.opening_balance_cents)
    EXECUTE FUNCTION refuse_opening_change();
COMMIT;
-- +goose StatementEnd
