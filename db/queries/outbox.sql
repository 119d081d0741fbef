-- The outbox: db/outbox.go runs these. The events themselves are written
-- by the statements that make the state changes they announce, each in
-- its saga's file, as a data-modifying CTE (or the statement's last part):
--
--     INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
--     SELECT '<aggregate>', <its id>, '<event type>',
--            jsonb_build_object('schema_version', 1, <name, value pairs>), $n
--     FROM <the changed rows>
--
-- schema_version is EventSchemaVersion; the aggregates and event types are
-- the Aggregate* and Event* constants of the package; $n is the
-- traceparent of the transaction's span (tracing.Traceparent, NULL
-- without one), from which the relay's publish continues the trace. The retention of
-- published events is in maintenance.sql.

-- name: ClaimEvents
-- The earliest unpublished event of each aggregate, in commit order, up to
-- $1, locked (SKIP LOCKED: several relays share the work) until they are
-- marked.
SELECT id::text, seq, aggregate_type, aggregate_id, event_type, payload, created_at, traceparent
FROM outbox_events e
WHERE published_at IS NULL
  AND NOT EXISTS (
      SELECT 1 FROM outbox_events p
      WHERE p.published_at IS NULL AND p.aggregate_type = e.aggregate_type
        AND p.aggregate_id = e.aggregate_id AND p.seq < e.seq)
ORDER BY seq
LIMIT $1
FOR UPDATE SKIP LOCKED

-- name: MarkPublished
-- $1 event ids.
UPDATE outbox_events SET published_at = clock_timestamp() WHERE id = ANY($1::uuid[])

-- name: RecordPublishFailure
-- $1 event ids, $2 the reason.
UPDATE outbox_events SET attempts = attempts + 1, last_error = $2 WHERE id = ANY($1::uuid[])

-- name: Lag
-- The unpublished events and the age of the oldest, in seconds.
SELECT count(*), COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(created_at)), 0)::float8
FROM outbox_events WHERE published_at IS NULL
