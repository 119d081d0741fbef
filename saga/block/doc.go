// Package block owns the cautionary block (bloqueio cautelar, Resolução
// BCB 147/2021; docs/blocks.md): on a well-founded suspicion of fraud an
// operator holds part of a PIX received, for at most 72 hours, the
// customer told at once (an event); then it is released, by an operator
// or by its saga at the 72 hours, or returned to the payer through the
// devolução saga. It is one saga in one package, listed by one line in
// saga/registry: its descriptor (Saga), its statements (blocks.sql) and
// store, its durable queue, its workflow and activities, its operator
// routes and its section of a credit's view, its metrics. Its table comes
// in db/migrations (0033), its events' schemas in internal/broker/schemas,
// its API in api/openapi/pix-api/blocks.yaml, its commands in
// cmd/pixctl/block.go.
//
// The money is held by the core's hold (db.Hold, I11), taken in the
// request's transaction with the block's row and its event: it is not
// spendable before the answer. Every change is decided under the block's
// row lock, on the status read under it (the fence), then the core's
// locks in their order (credit, account, hold): a release, a return and
// the expiry at once end with one winner, the others finding its decision
// and changing nothing. A return records the devolução that captures the
// hold (db.RecordRefund) in the same transaction and the block waits, as
// returning, for that devolução to end: returned, or, not made (reversed:
// the reversal credits the money back, available), released. The hold
// ends once (captured), and is never released besides.
package block
