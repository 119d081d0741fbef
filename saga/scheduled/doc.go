// Package scheduled owns the scheduled PIX (PIX Agendado): a PIX a customer
// asks for now and that is sent on a date. It is one saga in one package,
// listed by one line in saga/registry: its descriptor (Saga), its table's
// statements (queries.sql) and store, its durable queue, its workflow and
// activities, its customer routes, its metrics and its settings. Its table
// comes in db/migrations (0018), its events' schemas in
// internal/broker/schemas, its API in api/openapi/pix-api/scheduled.yaml.
//
// Nothing is debited at creation. The row's saga (workflow
// pix-scheduled:<id>) sleeps on a durable timer until the date, then, in
// one transaction under the row's lock, debits the account and creates the
// outgoing transfer (db.RecordTransfer), which the transfer saga sends; or,
// the balance short, ends failed with nothing debited. A cancel changes the
// row under the same lock, then wakes the run with a signal: whichever
// takes the lock first decides, and the run ends as the row says.
package scheduled
