-- +goose Up
-- The transactional outbox: every money movement writes its event in the
-- same transaction as the state change (invariant I6), and a relay
-- publishes it to NATS JetStream afterwards, at least once (the broker
-- drops a re-publish by the event id).

CREATE TABLE outbox_events (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- Commit order within an aggregate: the producers of one aggregate's
    -- events hold its row lock (the inbox row, the transfer), so a later
    -- event of the same aggregate always has a larger seq.
    seq            bigserial   NOT NULL UNIQUE,
    aggregate_type text        NOT NULL,
    aggregate_id   text        NOT NULL,
    event_type     text        NOT NULL,
    payload        jsonb       NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    published_at   timestamptz,
    attempts       integer     NOT NULL DEFAULT 0,
    last_error     text
);

-- The relay's queue: unpublished events in order, and per aggregate (to
-- find an aggregate's earliest unpublished event).
CREATE INDEX outbox_events_unpublished_idx ON outbox_events (seq) WHERE published_at IS NULL;
CREATE INDEX outbox_events_aggregate_unpublished_idx ON outbox_events (aggregate_type, aggregate_id, seq) WHERE published_at IS NULL;
CREATE INDEX outbox_events_published_idx ON outbox_events (published_at) WHERE published_at IS NOT NULL;

-- Wake the relays when events commit (a notification is delivered on
-- commit, and never for a rolled-back transaction).
-- +goose StatementBegin
CREATE FUNCTION outbox_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('pix_outbox', '');
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER outbox_events_notify AFTER INSERT ON outbox_events
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_events_notify();
