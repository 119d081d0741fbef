// Package sagatest owns what a saga's tests repeat, written once. For its
// routes: the API's router serving the saga's HTTP side (api.SagaHTTP)
// over PostgreSQL (NewAPI, on a db.Store of db/dbtest), the callers its
// tokens name with their scopes (Callers, Customer, Reader, Operator),
// requests and their JSON answers (API.Call, Code, API.Walk through a
// list's pages), and a recorder of the signals a route sends its runs
// (Signals, a sagakit.Signaller). For its workflow's recorded histories:
// their replay on the workflow as it is now, from the package's
// testdata/*.json, in each form a worker writes durations in
// (ReplayRecordedHistories), and their recording on a Temporal dev server
// with the activities the test answers, into the folder an environment
// variable names (Recorder, RecordEnv); a saga's replay test then says only
// which workflow and which runs. For its metrics: its Collectors
// registered as pixd registers them (Registry) and a metric's value read
// back by name and labels at a scrape (Value). For its settings: the
// environments they are read from and what each reads (RequireSettings).
// For its activities: an activity environment with them registered
// (Activities), an activity's result decoded (Run) or its error's type
// (ErrorType), and each way the PSP's token endpoint fails a call, with
// the error type it must end in (EachTokenFailure).
//
// It is for tests only, like db/dbtest: it builds the router, so it imports
// package api (which saga/sagakit, the pieces a saga's own code reuses,
// does not), package activities for the PSP's error types, and no saga's
// package.
package sagatest
