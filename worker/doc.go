// Package worker owns the Temporal workers of the PIX service, one per
// workflow family (runconf.Families) on the family's task queue, each
// registering the sagas of its family (the saga package's descriptors,
// registry.All), and their run loop, started and stopped together, with a
// graceful stop that lets running activities finish; their build's
// promotion (Promote); and who writes the service's Temporal Schedules
// (KeepSchedules: a worker of the current build, once each time its build
// becomes current, comparing them read-only in between).
package worker
