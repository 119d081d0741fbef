// Package outbox owns the relay of the transactional outbox: it wakes on
// the outbox's PostgreSQL notification (and polls, since a notification
// can be lost), publishes committed events to the broker in per-aggregate
// commit order, marks them published, and backs off while the broker is
// away. Several relays may run at once (db.Store.RelayEvents locks what
// each one takes).
package outbox
