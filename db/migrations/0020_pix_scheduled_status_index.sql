-- +goose Up
-- +goose NO TRANSACTION
-- An account's scheduled PIX of one status (GET /pix/scheduled?status=...,
-- pixctl scheduled list -status), by date, paged by keyset on
-- (scheduled_for, id) (ListByAccountStatus): pix_scheduled_account_idx
-- (0018) orders them but holds no status, so a page of the PIX still to run
-- read past every PIX the account ever had before them, in date order;
-- with this index, a page is a scan of its own rows.
--
-- Built CONCURRENTLY, as every index of a table written by the service's
-- requests, so that no request waits for the build (docs/extending.md, "An
-- index on a busy table").
DROP INDEX CONCURRENTLY IF EXISTS pix_scheduled_account_status_idx;
CREATE INDEX CONCURRENTLY pix_scheduled_account_status_idx ON pix_scheduled (account_id, status, scheduled_for, id);
