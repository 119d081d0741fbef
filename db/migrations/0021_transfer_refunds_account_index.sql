-- +goose Up
-- +goose NO TRANSACTION
-- An account's transfer refunds, by the account: the reconciliation sums
-- every account's movements (maintenance.sql UnbalancedAccounts, over the
-- view account_movements), one account at a time, and without this index
-- each account's sum read every transfer refund there is: a scan per
-- account, the books squared. pix_transfers has its account index (0003).
--
-- Built CONCURRENTLY, as every index of a table the service writes, so
-- that no refund waits for the build (docs/extending.md, "An index on a
-- busy table").
DROP INDEX CONCURRENTLY IF EXISTS pix_transfer_refunds_account_idx;
CREATE INDEX CONCURRENTLY pix_transfer_refunds_account_idx ON pix_transfer_refunds (account_id);
