// Package reconcile owns the reconciliation of the books: its Temporal
// Schedule (pix-reconcile:<task queue>, every RECONCILE_INTERVAL) runs
// PixReconcile, whose activity (ReconcileBooks) checks the books from the
// checkpoint the last run left (docs/design.md, "The reconciliation"):
// every balance against its opening balance and its movements, every held
// amount against its active holds, the done inbox rows against the
// credits, the devoluções and holds of a PIX against its credit, and the
// database's fences of the books. It reports; it never fixes money. An
// operator runs one at will with GET /admin/reconcile (pixctl reconcile).
//
// It is one saga in one package, listed by one line in saga/registry: its
// descriptor (Saga), its statements (reconcile.sql, and maintenance.sql
// and refunds.sql, their names kept from db/queries so that traces name
// them as before) and store, its workflow and activity, its Schedule, its
// route, its gauges (pix_reconcile_*) and its settings (RECONCILE_*). The
// tables it reads are the core's (db/migrations); its checkpoint's
// (reconcile_checkpoint, reconcile_settled) are its own, fenced by
// migrations 0024, 0039 and 0041. A run's cost is bounded (Limits): the
// history is recounted part by part, in a rotation.
package reconcile
