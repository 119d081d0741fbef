// Package refund owns the devolução of a received PIX (POST
// /pix/credits/{end_to_end_id}/refunds): the customer's money debited,
// asked of the PSP under the refund's id, then returned, or reversed when
// the PSP's own record says it was not made. It is one saga in one
// package, listed by one line in saga/registry: its descriptor (Saga), its
// routes (POST /pix/credits/{end_to_end_id}/refunds, GET
// /pix/refunds/{id}, the outcomes an API Pix webhook announces, the
// "refunds" section of a credit's view), its statements (refunds.sql) and
// store, its workflow and activities, its metrics and its settings
// (REFUND_*). Its tables come in db/migrations.
//
// What another saga needs of it stays in the core (package db): the
// hand-over, a devolução debited and recorded in the caller's own
// transaction (db.RecordRefund, which the cautionary block uses), the open
// refunds' queue its dispatcher reads (db.Store.RefundQueue), the read of
// a refund (db.Store.GetRefund, which the block follows), and the outcomes
// a PSP announced (db.NoteRefundNotices, which the PSP catch-up runs too).
// Its business errors (pix.RefundKinds) and event types (db.RefundEvents)
// stay below it too, with the code that raises or writes them, and so does
// its family (runconf.Refunds), which the block shares.
//
// The saga is compensated, not rolled back: a devolução the PSP's own
// record says was not made is reversed exactly once (the reversal row is
// the guard), one it returned never is.
package refund
