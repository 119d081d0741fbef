-- +goose Up
-- The retention deletes done inbox rows past a window, oldest first; the
-- credit (pix_credits) stays and keeps guarding against a second credit.
CREATE INDEX inbox_messages_done_idx ON inbox_messages (processed_at) WHERE status = 'done';
