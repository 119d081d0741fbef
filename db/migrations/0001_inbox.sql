-- +goose Up
-- Core of the incoming-PIX service: accounts, the inbox of PSP notifications,
-- and the credits. pix_credits has no foreign key to inbox_messages on purpose:
-- inbox rows are cleaned up after a retention window, and the credit's primary
-- key is the guard against a second credit that lasts forever (invariant I1).

CREATE TABLE accounts (
    id                    text PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
    owner_name            text        NOT NULL,
    status                text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'closed')),
    opening_balance_cents bigint      NOT NULL DEFAULT 0 CHECK (opening_balance_cents >= 0),
    balance_cents         bigint      NOT NULL DEFAULT 0 CHECK (balance_cents >= 0),
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE inbox_messages (
    end_to_end_id     text PRIMARY KEY CHECK (end_to_end_id ~ '^E[A-Za-z0-9]{31}$'),
    -- No foreign key: a PIX for an unknown account is stored and fails on its own.
    account_id        text        NOT NULL,
    amount_cents      bigint      NOT NULL CHECK (amount_cents > 0),
    payload           jsonb       NOT NULL,
    status            text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'failed')),
    attempts          integer     NOT NULL DEFAULT 0,
    last_error        text,
    deliveries        integer     NOT NULL DEFAULT 1,
    received_at       timestamptz NOT NULL DEFAULT now(),
    last_delivered_at timestamptz NOT NULL DEFAULT now(),
    -- When the row became done or failed.
    processed_at      timestamptz,
    -- When the dispatcher must next (re)start the row's workflow. Set on
    -- arrival and on re-drive, pushed forward by each claim, cleared when the
    -- row leaves pending. A claim that is never followed by a start (process
    -- died, Temporal down) simply comes due again: nothing accepted is lost.
    dispatch_due_at   timestamptz,
    -- First successful workflow start of the current drive (dispatch lag).
    dispatched_at     timestamptz,
    CONSTRAINT inbox_messages_pending_is_due CHECK ((status = 'pending') = (dispatch_due_at IS NOT NULL))
);

CREATE INDEX inbox_messages_dispatch_due_idx ON inbox_messages (dispatch_due_at) WHERE status = 'pending';
CREATE INDEX inbox_messages_failed_idx ON inbox_messages (account_id, processed_at) WHERE status = 'failed';

CREATE TABLE pix_credits (
    end_to_end_id       text PRIMARY KEY,
    account_id          text        NOT NULL REFERENCES accounts (id),
    amount_cents        bigint      NOT NULL CHECK (amount_cents > 0),
    balance_after_cents bigint      NOT NULL,
    credited_at         timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX pix_credits_account_idx ON pix_credits (account_id, credited_at);
