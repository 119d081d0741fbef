// Package workflows owns the PIX workflows: their IDs (which carry the business
// key, so every run is findable in the Temporal UI), their inputs, their
// explicit retry policies, and the idempotent start. Workflows hold no I/O:
// they decide, the activities act.
package workflows
