-- +goose Up
-- +goose NO TRANSACTION
-- An account's reversed devoluções, by the account, for the same sums as
-- 0021 (UnbalancedAccounts): without it each account's sum read every
-- reversal there is. pix_refunds has its account index (0009).
--
-- Built CONCURRENTLY (docs/extending.md, "An index on a busy table").
DROP INDEX CONCURRENTLY IF EXISTS pix_refund_reversals_account_idx;
CREATE INDEX CONCURRENTLY pix_refund_reversals_account_idx ON pix_refund_reversals (account_id);
