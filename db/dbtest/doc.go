// Package dbtest gives each test its own PostgreSQL schema, migrated (in a
// database of its own, a copy of a template database the migrations ran
// into once: template.go) or left empty (for the migrations' own tests), and
// dropped when the test ends (a migrated one's database is made ahead and
// dropped behind the tests, by a goroutine of the process: copies.go), so
// that tests and packages never see each other's rows nor what earlier runs
// left (a template of other migrations is dropped once no test process uses
// it and it is a day old, the copies a process left once it ended and
// they are two hours old:
// template.go and copies.go say how "in use" is known); and the fixtures every package's
// tests share: CreditPIX, an account (with its Pix key) credited a PIX
// through the credit's own path (CreditNth: the n-th PIX, E2EID(n); Notice,
// a PSP's notification); OpenAccount (NewWithAccount: New with
// one) and Balance; RequireBooks,
// the books as I2, I9 and I11 hold them; Events, an aggregate's outbox
// events; ClaimStates, what a queue's claim says of each row; Reserve, a
// fresh Idempotency-Key (Keys).
package dbtest
