// Package transfer owns the outgoing transfer (POST /pix): the customer's
// money debited, sent to the PSP under its end_to_end_id, then settled, or
// refunded when the PSP rejects it. It is one saga in one package, listed
// by one line in saga/registry: its descriptor (Saga), its routes (POST
// /pix, GET /pix/transfers/{id}), its statements (transfers.sql) and store,
// its workflow and activities, its metrics and its settings
// (TRANSFER_SETTLEMENT_*). Its table comes in db/migrations.
//
// What another saga needs of it stays in the core (package db): the
// hand-over, a transfer recorded after its debit in the caller's own
// transaction (db.RecordTransfer, which the scheduled PIX uses), and the
// open transfers' queue its dispatcher reads (db.Store.TransferQueue).
// Its business errors (pix.TransferKinds) and event types
// (db.TransferEvents) stay below it too, with the code that raises or
// writes them.
//
// The saga is compensated, not rolled back: a transfer the PSP's own record
// says rejected is refunded exactly once (the refund row is the guard),
// one it holds as settled never is (I8).
package transfer
