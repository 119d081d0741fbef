// Package workflows owns the credit's and the devolução's workflows: their
// IDs (which carry the business key, so every run is findable in the
// Temporal UI), their inputs, their explicit retry policies, and the
// idempotent start; and what every saga's workflow shares: the families and
// their task queues, the listing in the Temporal UI (ListingVersion,
// UpsertStatus, StartDue), the PSP calls' pace (PSPCalls), the Schedules.
// A saga of its own package (saga/<name>) keeps its workflow there.
// Workflows hold no I/O: they decide, the activities act.
package workflows
