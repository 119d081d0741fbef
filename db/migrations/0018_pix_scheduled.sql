-- +goose Up
-- The scheduled PIX (PIX Agendado, saga/scheduled): a PIX a customer asks
-- for now and that is sent on a date. Nothing is debited at creation; on
-- the date its saga debits the account and creates the outgoing transfer
-- (pix_transfers, transfer_id) in one transaction, and the transfer saga
-- sends it. A row's status is its truth, changed once, under its row lock:
-- scheduled -> executed (the transfer made) | failed (nothing debited:
-- failure_reason says why) | cancelled (the customer cancelled before it
-- ran).
CREATE TABLE pix_scheduled (
    id              uuid        PRIMARY KEY,
    account_id      text        NOT NULL REFERENCES accounts (id),
    amount_cents    bigint      NOT NULL CHECK (amount_cents > 0),
    pix_key         text        NOT NULL CHECK (char_length(pix_key) BETWEEN 1 AND 77),
    description     text,
    -- The date asked for (America/Sao_Paulo), and the instant the saga
    -- runs it: that date at the configured hour there.
    scheduled_for   date        NOT NULL,
    run_at          timestamptz NOT NULL,
    status          text        NOT NULL DEFAULT 'scheduled'
        CHECK (status IN ('scheduled', 'executed', 'failed', 'cancelled')),
    failure_reason  text,
    -- The outgoing transfer it created, and that transfer's end_to_end_id
    -- (the PIX's, once it is sent).
    transfer_id     uuid        UNIQUE REFERENCES pix_transfers (id),
    end_to_end_id   text,
    idempotency_key uuid,
    requested_by    text,
    traceparent     text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    -- When it left scheduled (executed, failed or cancelled).
    concluded_at    timestamptz,
    -- The durable start of its saga (saga/scheduled's queue): due while the
    -- row is scheduled; the saga's run waits until run_at, and is not
    -- rechecked before (QueueSpec.NotBefore).
    dispatch_due_at timestamptz,
    dispatched_at   timestamptz,
    CONSTRAINT pix_scheduled_executed_has_transfer CHECK ((status = 'executed') = (transfer_id IS NOT NULL)),
    CONSTRAINT pix_scheduled_due_while_scheduled CHECK ((status = 'scheduled') = (dispatch_due_at IS NOT NULL)),
    CONSTRAINT pix_scheduled_concluded CHECK ((status = 'scheduled') = (concluded_at IS NULL))
);

CREATE INDEX pix_scheduled_due_idx ON pix_scheduled (dispatch_due_at) WHERE dispatch_due_at IS NOT NULL;
CREATE INDEX pix_scheduled_account_idx ON pix_scheduled (account_id, scheduled_for, id);
CREATE INDEX pix_scheduled_pending_idx ON pix_scheduled (run_at) WHERE status = 'scheduled';

-- The payload of every event of a scheduled PIX (pix.scheduled.created,
-- pix.scheduled.concluded; internal/broker/schemas), at the time at: one
-- shape, written by one function. STABLE, not IMMUTABLE: a timestamptz
-- is written in the session's time zone.
-- +goose StatementBegin
CREATE FUNCTION pix_scheduled_event(s pix_scheduled, at timestamptz) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('schema_version', 1, 'scheduled_id', s.id, 'account_id', s.account_id,
                              'amount_cents', s.amount_cents, 'pix_key', s.pix_key,
                              'scheduled_for', to_char(s.scheduled_for, 'YYYY-MM-DD'), 'status', s.status,
                              'failure_reason', s.failure_reason, 'transfer_id', s.transfer_id,
                              'end_to_end_id', s.end_to_end_id, 'at', at)
$$;
-- +goose StatementEnd
