-- +goose Up
-- +goose NO TRANSACTION
-- The trace context of the work a row starts (docs/tracing.md): the W3C
-- traceparent of the request or activity that wrote the row, from which the
-- next, asynchronous hop continues the same trace. An inbox row's, a
-- transfer's or a refund's is the span of the request that created it (the
-- PSP's webhook, POST /pix, POST .../refunds): the dispatcher starts the
-- workflow under it, and a re-drive keeps it, so that a PIX is one trace
-- however often it is retried. An outbox event's is the span of the
-- transaction that wrote it: the relay's publish continues from it. NULL
-- when the writer traced nothing (tracing off, rows from before this
-- migration). Nullable columns without a default: no table rewrite, only a
-- brief ACCESS EXCLUSIVE lock on each table.
--
-- Each table in a transaction of its own (NO TRANSACTION, then one
-- BEGIN ... COMMIT per table): one transaction would keep the busy inbox
-- locked while it waited for the next table's lock. The lock timeout keeps
-- a wait behind a long transaction from holding up the inserts queued
-- behind it (it fails instead, to be run again: each ADD COLUMN is IF NOT
-- EXISTS, so a run that stopped half-way goes on where it stopped).
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE inbox_messages ADD COLUMN IF NOT EXISTS traceparent text;
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_transfers ADD COLUMN IF NOT EXISTS traceparent text;
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE pix_refunds ADD COLUMN IF NOT EXISTS traceparent text;
COMMIT;
-- +goose StatementEnd
-- +goose StatementBegin
BEGIN;
SET LOCAL lock_timeout = '5s';
ALTER TABLE outbox_events ADD COLUMN IF NOT EXISTS traceparent text;
COMMIT;
-- +goose StatementEnd
