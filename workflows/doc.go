// Package workflows owns the credit's workflow: its IDs (which carry the
// business key, so every run is findable in the Temporal UI), its inputs,
// its explicit retry policies, and the idempotent start; and what every
// saga's workflow shares: the listing in the Temporal UI (ListingVersion,
// ListingOf, UpsertStatus, StartDue), the Schedules. The families and their
// task queues, the credit's retries (RetrySettings) and the PSP calls' pace
// (PSPCalls) are internal/runconf's, below the configuration that reads
// them (internal/config), which never imports this package. A saga of its own package
// (saga/<name>: the transfer's, the devolução's, ...) keeps its workflow
// there. Workflows hold no I/O: they decide, the activities act.
package workflows
