// Package worker owns the Temporal workers of the PIX service, one per
// workflow family (workflows.Families) on the family's task queue, each
// registering the sagas of its family (the saga package's descriptors,
// registry.All), and their run loop, started and stopped together, with a
// graceful stop that lets running activities finish.
package worker
