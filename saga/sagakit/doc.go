// Package sagakit owns the pieces a saga's package reuses rather than
// writes again, each written once here from the scheduled PIX's, which
// uses them:
//
//   - Timer: the durable timer a signal wakes (workflow side): a run sleeps
//     until the deadline its state gives, a signal makes it read its state
//     again, which says whether it still waits and until when;
//   - Signal and Wake: how a saga's route or activity signals its run (the
//     Signaller, the Temporal client), a workflow with no run open being no
//     failure, and the wake after a commit, bounded and off the request's
//     cancellation;
//   - ScrapeGauges: gauges read from PostgreSQL at each scrape, with a
//     timeout, reporting nothing (and logging why) when the query fails;
//   - OldestAge: the age of a saga's oldest open row, read at each scrape,
//     NaN (logged) when the read fails, as the core's ages (the
//     transfer's, the devolução's);
//   - Finished: the counter of a saga's runs ended, by outcome, which its
//     activities count into (saga.FinishedOf keeps one per process);
//   - One: the one row of a saga's table a statement returns, read by
//     column name, its absence the saga's not-found error.
//
// What a saga's route tests repeat (the router on PostgreSQL, callers with
// scopes, requests and their JSON) is saga/sagatest's.
//
// It sits below every saga's package and imports neither package saga nor
// api nor any saga (saga imports api, and a saga imports saga): the Temporal
// SDK, Prometheus and pgx only.
package sagakit
