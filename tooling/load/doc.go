// Package load drives the running service the way a PSP does, and measures
// it: an open-model load of webhooks over HTTP (a constant arrival rate, so a
// slow server can't slow the load down and hide its latency), with
// redeliveries and copies sent at the same instant; the invariants checked in
// the database afterwards; and the ceilings the figures are compared with,
// measured in the same run (the same inbox insert straight at PostgreSQL, and
// a no-op workflow on the same Temporal server).
package load
