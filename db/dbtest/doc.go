// Package dbtest gives each test its own PostgreSQL schema in the shared test
// database, migrated (or left empty, for the migrations' own tests) and
// dropped when the test ends, so that tests and packages never see each
// other's rows nor what earlier runs left.
package dbtest
