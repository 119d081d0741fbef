// Package dispatch owns the bridge from the inbox to Temporal: it starts the
// credit workflow of every pending inbox row whose dispatch is due. The
// webhook never waits for Temporal; it commits the row and kicks the
// dispatcher. Rows whose start failed (Temporal down, process died between
// commit and start) come due again and are started then, and pending rows
// already started are re-checked now and then (a run lost by Temporal, or
// terminated by hand, is started again). Starting is idempotent, and several
// dispatchers may run against one database: claims use FOR UPDATE SKIP LOCKED.
package dispatch
