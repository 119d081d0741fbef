-- +goose Up
-- How far each scheduled lister of another's record has covered it
-- (saga/covered): the DICT's infraction reports and refund requests
-- (saga/med's lister, name dict-med). A row per lister, written only by
-- its runs, and only once every item of a window was taken in; each
-- advance names the value it started from (a late run changes nothing),
-- moves only forwards and never past the database's clock. No row: the
-- lister never finished a window, and its first one looks back its
-- lookback. (The PSP catch-up's window stays in psp_catchup, 0015.)
CREATE TABLE covered_windows (
    name          text PRIMARY KEY,
    covered_until timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now()
);
