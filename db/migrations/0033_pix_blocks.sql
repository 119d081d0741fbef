-- +goose Up
-- The cautionary block (bloqueio cautelar, Resolução BCB 147/2021;
-- saga/block): an operator holds part of a PIX received, on a well-founded
-- suspicion of fraud, for at most 72 hours, the customer told at once;
-- then it is released (by an operator, or at expires_at by its saga's
-- durable timer) or returned (a devolução of the PIX that captures the
-- hold, db.RecordRefund). The money is held by the core's hold (hold_id,
-- pix_holds; I11), taken in the transaction that writes the row. A row's
-- status is its truth, changed under its row lock, each change once:
-- active -> released | returning -> returned | released (the devolução
-- was not made: its reversal credited the money back, available).
CREATE TABLE pix_blocks (
    id              uuid        PRIMARY KEY,
    end_to_end_id   text        NOT NULL REFERENCES pix_credits (end_to_end_id),
    account_id      text        NOT NULL REFERENCES accounts (id),
    hold_id         uuid        NOT NULL UNIQUE REFERENCES pix_holds (id),
    amount_cents    bigint      NOT NULL CHECK (amount_cents > 0),
    reason          text        NOT NULL CHECK (char_length(reason) BETWEEN 1 AND 140),
    status          text        NOT NULL DEFAULT 'active'
        CHECK (status IN ('active', 'returning', 'released', 'returned')),
    -- Why it ended: released by an operator, at its 72 hours, or because
    -- its devolução was not made; returned when its devolução was.
    end_cause       text
        CHECK (end_cause IN ('operator', 'expired', 'return_not_made', 'returned')),
    -- The 72 hours: its saga releases it then, unless it ended before.
    expires_at      timestamptz NOT NULL,
    -- The devolução that returns it (the hand-over to the devolução saga).
    refund_id       text        UNIQUE REFERENCES pix_refunds (id),
    requested_by    text        NOT NULL,
    idempotency_key uuid,
    -- Who released it or asked for its return (an operator's subject).
    ended_by        text,
    traceparent     text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    ended_at        timestamptz,
    -- The durable start of its saga: due while the block is open (active,
    -- or returning until its devolução ends).
    dispatch_due_at timestamptz,
    dispatched_at   timestamptz,
    CONSTRAINT pix_blocks_due_while_open CHECK ((status IN ('active', 'returning')) = (dispatch_due_at IS NOT NULL)),
    CONSTRAINT pix_blocks_ended CHECK ((status IN ('active', 'returning')) = (ended_at IS NULL)),
    CONSTRAINT pix_blocks_end_cause CHECK ((ended_at IS NULL) = (end_cause IS NULL)),
    CONSTRAINT pix_blocks_refund_once_returned
        CHECK ((refund_id IS NOT NULL) = (status IN ('returning', 'returned') OR COALESCE(end_cause, '') = 'return_not_made'))
);

CREATE INDEX pix_blocks_due_idx ON pix_blocks (dispatch_due_at) WHERE dispatch_due_at IS NOT NULL;
-- A PIX's blocks, a page at a time (GET /pix/credits/{id}/blocks).
CREATE INDEX pix_blocks_pix_idx ON pix_blocks (end_to_end_id, created_at, id);
-- The open blocks (the gauges, at each scrape).
CREATE INDEX pix_blocks_open_idx ON pix_blocks (created_at) INCLUDE (status, amount_cents, expires_at)
    WHERE status IN ('active', 'returning');

-- The payload of every event of a block (pix.block.created, .returning,
-- .released, .returned; internal/broker/schemas), at the time at: one
-- shape, written by one function. STABLE: a timestamptz is written in the
-- session's time zone.
-- +goose StatementBegin
CREATE FUNCTION pix_block_event(b pix_blocks, at timestamptz) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('schema_version', 1, 'block_id', b.id, 'end_to_end_id', b.end_to_end_id,
                              'account_id', b.account_id, 'hold_id', b.hold_id, 'amount_cents', b.amount_cents,
                              'status', b.status, 'end_cause', b.end_cause, 'expires_at', b.expires_at,
                              'refund_id', b.refund_id, 'at', at)
$$;
-- +goose StatementEnd
