-- +goose Up
-- Refunds (devoluções) of received PIX: the customer returns a PIX, whole
-- or in part, within 90 days. The debit and its pix_refunds row are one
-- transaction (I2), with the Idempotency-Key's answer; a devolução the PSP
-- did not make is compensated by a pix_refund_reversals row, whose primary
-- key reverses a refund at most once.
CREATE TABLE pix_refunds (
    -- Ours: the devolução's id at the PSP (BCB: 1 to 35 letters or digits).
    id                  text PRIMARY KEY CHECK (id ~ '^[a-zA-Z0-9]{1,35}$'),
    -- The PIX returned; its credit outlives the inbox row.
    end_to_end_id       text        NOT NULL REFERENCES pix_credits (end_to_end_id),
    account_id          text        NOT NULL REFERENCES accounts (id),
    amount_cents        bigint      NOT NULL CHECK (amount_cents > 0),
    reason              text CHECK (char_length(reason) <= 140),
    -- debited -> requested -> returned | reversed (reversed also from
    -- debited, when the PSP refuses the devolução at once).
    status              text        NOT NULL DEFAULT 'debited'
        CHECK (status IN ('debited', 'requested', 'returned', 'reversed')),
    -- The devolução's own end-to-end id, given by the PSP.
    rtr_id              text,
    balance_after_cents bigint      NOT NULL,
    -- The PSP's motivo when it did not return the money.
    failure_reason      text,
    idempotency_key     uuid,
    requested_by        text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    requested_at        timestamptz,
    returned_at         timestamptz,
    reversed_at         timestamptz,
    -- The outcome the PSP's webhook announced (its devolucoes), a hint the
    -- saga confirms with the PSP's own record before acting on it.
    psp_notice          text CHECK (psp_notice IN ('DEVOLVIDO', 'NAO_REALIZADO')),
    noticed_at          timestamptz,
    -- As for transfers: the dispatcher (re)starts the refund's workflow
    -- while it is open, and signals a notice to its open run.
    dispatch_due_at     timestamptz,
    dispatched_at       timestamptz,
    CONSTRAINT pix_refunds_open_is_due CHECK ((status IN ('debited', 'requested')) = (dispatch_due_at IS NOT NULL))
);

CREATE INDEX pix_refunds_dispatch_due_idx ON pix_refunds (dispatch_due_at) WHERE dispatch_due_at IS NOT NULL;
CREATE INDEX pix_refunds_pix_idx ON pix_refunds (end_to_end_id);
CREATE INDEX pix_refunds_account_idx ON pix_refunds (account_id, created_at);

-- The compensation of a devolução the PSP did not make.
CREATE TABLE pix_refund_reversals (
    refund_id           text PRIMARY KEY REFERENCES pix_refunds (id),
    account_id          text        NOT NULL REFERENCES accounts (id),
    amount_cents        bigint      NOT NULL CHECK (amount_cents > 0),
    balance_after_cents bigint      NOT NULL,
    reason              text        NOT NULL,
    reversed_at         timestamptz NOT NULL DEFAULT now()
);

-- The books (0008): a refund debits, its reversal credits back.
CREATE OR REPLACE VIEW account_movements (account_id, amount_cents, kind, ref) AS
    SELECT account_id, amount_cents, 'pix_credit', end_to_end_id FROM pix_credits
    UNION ALL
    SELECT account_id, -amount_cents, 'pix_transfer', id::text FROM pix_transfers
    UNION ALL
    SELECT account_id, amount_cents, 'pix_transfer_refund', transfer_id::text FROM pix_transfer_refunds
    UNION ALL
    SELECT account_id, -amount_cents, 'pix_refund', id FROM pix_refunds
    UNION ALL
    SELECT account_id, amount_cents, 'pix_refund_reversal', refund_id FROM pix_refund_reversals;
