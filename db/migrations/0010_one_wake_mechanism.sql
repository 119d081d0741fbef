-- +goose Up
-- One wake mechanism: the store wakes the outbox relays after the commits
-- that wrote events (db.Store's waker, as for the dispatchers), so the
-- trigger that notified them on every insert goes. A relay also polls: an
-- event committed by a process that died before its wake waits one poll
-- interval at most.
DROP TRIGGER IF EXISTS outbox_events_notify ON outbox_events;
DROP FUNCTION IF EXISTS outbox_events_notify();
