-- +goose Up
-- Outgoing PIX: the Idempotency-Key layer of POST /pix, the transfers, and
-- their refunds. Every money movement is a row written in the same
-- transaction as the balance change (invariant I2): the debit with its
-- pix_transfers row, the compensation with its pix_transfer_refunds row.

-- One row per Idempotency-Key. A request reserves the key (lock_token,
-- locked_until) in its own short transaction, then runs the operation and
-- records the response (status_code, response_body) in the operation's
-- transaction, fenced by its lock_token: a holder whose reservation was
-- taken over can't commit. A reservation past locked_until whose holder
-- never recorded a response (it died) is taken over by the next request.
CREATE TABLE idempotency_keys (
    key           uuid PRIMARY KEY,
    -- hex SHA-256 of the canonical request body: the same key with another
    -- body is refused.
    request_hash  text        NOT NULL,
    lock_token    uuid,
    locked_until  timestamptz,
    status_code   integer,
    response_body jsonb,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    CONSTRAINT idempotency_keys_response CHECK ((status_code IS NULL) = (response_body IS NULL)),
    CONSTRAINT idempotency_keys_reserved_or_answered CHECK ((status_code IS NULL) = (lock_token IS NOT NULL AND locked_until IS NOT NULL))
);

CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);

CREATE TABLE pix_transfers (
    id                  uuid PRIMARY KEY,
    -- The reference the PSP deduplicates on.
    end_to_end_id       text        NOT NULL UNIQUE CHECK (end_to_end_id ~ '^E[A-Za-z0-9]{31}$'),
    account_id          text        NOT NULL REFERENCES accounts (id),
    amount_cents        bigint      NOT NULL CHECK (amount_cents > 0),
    pix_key             text        NOT NULL CHECK (char_length(pix_key) BETWEEN 1 AND 77),
    description         text,
    -- debited -> submitted -> settled | refunded (refunded also from debited,
    -- when the PSP rejects the submission).
    status              text        NOT NULL DEFAULT 'debited'
        CHECK (status IN ('debited', 'submitted', 'settled', 'refunded')),
    balance_after_cents bigint      NOT NULL,
    failure_reason      text,
    idempotency_key     uuid,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    submitted_at        timestamptz,
    settled_at          timestamptz,
    refunded_at         timestamptz,
    -- As for inbox rows: the dispatcher (re)starts the transfer's workflow
    -- while the transfer is open, so that a crash or a Temporal outage
    -- between the commit and the start loses nothing.
    dispatch_due_at     timestamptz,
    dispatched_at       timestamptz,
    CONSTRAINT pix_transfers_open_is_due CHECK ((status IN ('debited', 'submitted')) = (dispatch_due_at IS NOT NULL))
);

CREATE INDEX pix_transfers_dispatch_due_idx ON pix_transfers (dispatch_due_at) WHERE dispatch_due_at IS NOT NULL;
CREATE INDEX pix_transfers_account_idx ON pix_transfers (account_id, created_at);

-- The compensation of a transfer the PSP rejected. Its primary key is the
-- guard that refunds a transfer at most once.
CREATE TABLE pix_transfer_refunds (
    transfer_id         uuid PRIMARY KEY REFERENCES pix_transfers (id),
    account_id          text        NOT NULL REFERENCES accounts (id),
    amount_cents        bigint      NOT NULL CHECK (amount_cents > 0),
    balance_after_cents bigint      NOT NULL,
    reason              text        NOT NULL,
    refunded_at         timestamptz NOT NULL DEFAULT now()
);
