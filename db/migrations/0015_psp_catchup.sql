-- +goose Up
-- How far the scheduled PSP catch-up (workflows.PSPCatchUp, docs/operations.md
-- "The PSP catch-up") has covered the PSP's own record of the PIX it received
-- (GET /pix): every PIX the PSP created before covered_until was listed and
-- stored in the inbox. One row, written only by the catch-up, and only once
-- every page of a window was stored; each advance names the value it started
-- from (a late run changes nothing). No row: the catch-up never finished a
-- window, and its first one looks back PSP_CATCHUP_LOOKBACK.
CREATE TABLE psp_catchup (
    id            boolean PRIMARY KEY DEFAULT true CHECK (id),
    covered_until timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now()
);
