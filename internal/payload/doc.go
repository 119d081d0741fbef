// Package payload owns the forms values take in the service's Temporal
// payloads (workflow and activity inputs and results, signals, memos,
// heartbeat details, Schedule arguments), which an on-call engineer reads
// in the Temporal UI: Duration, written as Go's duration text ("1s",
// "2m30s") rather than integer nanoseconds, and read in either form. How
// it is written is the one process-wide setting here
// (TEMPORAL_DURATION_WRITE_FORMAT: WriteDurations), because a release
// before the text form can't read it (docs/operations.md, "Upgrading the
// workers").
package payload
