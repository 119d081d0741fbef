// Package dbtest gives each test its own PostgreSQL schema in the shared test
// database, migrated (or left empty, for the migrations' own tests) and
// dropped when the test ends, so that tests and packages never see each
// other's rows nor what earlier runs left; and the fixtures every package's
// tests share: CreditPIX, an account (with its Pix key) credited a PIX
// through the credit's own path.
package dbtest
