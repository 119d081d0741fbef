-- +goose Up
-- The Central Bank's "API Pix" webhook format names no account: a notified PIX
-- carries the receiver's Pix key (chave, optional) and the txid of the charge
-- the customer issued. The account is resolved through pix_keys, else through
-- pix_charges, when the PIX is credited (not when it arrives): a PIX whose key
-- or charge is unknown is stored all the same, fails with the reason, and can
-- be re-driven once the key or charge exists.

CREATE TABLE pix_keys (
    key        text PRIMARY KEY CHECK (char_length(key) BETWEEN 1 AND 77),
    key_type   text        NOT NULL CHECK (key_type IN ('cpf', 'cnpj', 'email', 'phone', 'evp')),
    account_id text        NOT NULL REFERENCES accounts (id),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX pix_keys_account_idx ON pix_keys (account_id);

-- Status names are the API Pix's own (cob status).
CREATE TABLE pix_charges (
    txid                  text PRIMARY KEY CHECK (txid ~ '^[A-Za-z0-9]{1,35}$'),
    account_id            text        NOT NULL REFERENCES accounts (id),
    amount_expected_cents bigint      CHECK (amount_expected_cents > 0),
    status                text        NOT NULL DEFAULT 'ATIVA'
        CHECK (status IN ('ATIVA', 'CONCLUIDA', 'REMOVIDA_PELO_USUARIO_RECEBEDOR', 'REMOVIDA_PELO_PSP')),
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX pix_charges_account_idx ON pix_charges (account_id);

-- source: which webhook format brought the PIX. For 'native' the PSP names the
-- account; for 'api_pix' account_id stays NULL until the credit resolves it
-- from pix_key or txid. Whether a redelivery is the same PIX is decided on
-- what the PSP sent (amount and account, or amount, key and txid), never on
-- what we resolved.
ALTER TABLE inbox_messages
    ALTER COLUMN account_id DROP NOT NULL,
    ADD COLUMN source        text NOT NULL DEFAULT 'native' CHECK (source IN ('native', 'api_pix')),
    ADD COLUMN pix_key       text CHECK (char_length(pix_key) BETWEEN 1 AND 77),
    ADD COLUMN txid          text CHECK (txid ~ '^[A-Za-z0-9]{1,35}$'),
    -- The PSP whose signature authenticated the first delivery (NULL when
    -- signatures are not required and none was sent).
    ADD COLUMN psp           text,
    -- The latest delivery that carried devolucoes (the PSP's notice of a
    -- refund of this PIX): recorded, never credited.
    ADD COLUMN refund_notice jsonb,
    ADD CONSTRAINT inbox_messages_recipient CHECK (
        (source = 'native' AND account_id IS NOT NULL)
        OR (source = 'api_pix' AND (pix_key IS NOT NULL OR txid IS NOT NULL)));
