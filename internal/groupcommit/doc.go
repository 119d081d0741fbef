// Package groupcommit owns group commit: concurrent callers' rows written
// together, in one transaction with one commit, each caller answered only
// once the group's transaction committed (or failed).
//
// A Committer has a bounded queue and a few writers. A call that finds a
// writer idle goes straight through, alone: with no concurrency, nothing
// waits. While every writer is busy, calls queue up, and the next writer
// free takes all it finds (up to MaxRows; waiting Window for more when it
// found company): under load, one commit serves many calls, which is where
// the throughput comes from. A full queue sheds at once (ErrQueueFull),
// so memory stays bounded through saturation. What a group's write does
// with each call (its answer, one call's failure kept from the others) is
// the writer function's: db.Receiver's for the webhooks.
package groupcommit
