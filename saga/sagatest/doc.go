// Package sagatest owns what a saga's route tests repeat, written once: the
// API's router serving the saga's HTTP side (api.SagaHTTP) over
// PostgreSQL (NewAPI, on a db.Store of db/dbtest), the callers its tokens
// name with their scopes (Callers, Customer, Reader, Operator), requests
// and their JSON answers (API.Call, Code, API.Walk through a list's
// pages), and a recorder of the signals a route sends its runs (Signals,
// a sagakit.Signaller).
//
// It is for tests only, like db/dbtest: it builds the router, so it imports
// package api (which saga/sagakit, the pieces a saga's own code reuses,
// does not), and no saga's package.
package sagatest
