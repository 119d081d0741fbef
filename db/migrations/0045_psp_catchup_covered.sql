-- +goose Up
-- The PSP catch-up's covered end moves to covered_windows (0042), the one
-- table of the scheduled listers' windows (saga/covered), under the name
-- psp-catchup. psp_catchup stays while the workers of the builds before
-- this one may still run (they keep writing it; what either side lists
-- again is compared, never stored twice); a later migration drops it.
INSERT INTO covered_windows (name, covered_until, updated_at)
SELECT 'psp-catchup', covered_until, updated_at FROM psp_catchup
ON CONFLICT (name) DO NOTHING;
