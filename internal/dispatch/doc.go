// Package dispatch owns the bridge from the inbox to Temporal. The Notifier
// runs in the API process: after a commit that made a row due it sends a
// PostgreSQL notification, off the request path (the webhook never waits
// for Temporal). The Dispatcher runs in the worker process, sharing the
// worker's Temporal client so that its starts are eager: it wakes on the
// notification, on its poll (a notification can be lost), and starts the
// credit workflow of every pending row whose dispatch is due. Rows whose
// start failed (Temporal down, process died between commit and start) come
// due again and are started then, and pending rows already started are
// re-checked now and then (a run lost by Temporal, or terminated by hand, is
// started again). Starting is idempotent, and several dispatchers may run
// against one database: claims use FOR UPDATE SKIP LOCKED.
package dispatch
