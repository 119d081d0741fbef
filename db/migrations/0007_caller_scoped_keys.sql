-- +goose Up
-- Idempotency-Keys belong to the caller that sent them (the bearer token's
-- sub): the same key sent by two callers is two keys, so a caller can
-- neither replay nor block another's request by guessing or learning its
-- key. Rows written before authentication belong to caller '' (no token
-- ever has an empty sub); they lapse with their TTL.
--
-- The table holds a day of keys (IDEMPOTENCY_KEY_TTL): rebuilding its
-- primary key takes a moment, under this migration's lock.
ALTER TABLE idempotency_keys ADD COLUMN caller text NOT NULL DEFAULT '';
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys ADD PRIMARY KEY (caller, key);

-- Who asked for each transfer (the token's sub): the audit trail of a debit.
ALTER TABLE pix_transfers ADD COLUMN requested_by text;
