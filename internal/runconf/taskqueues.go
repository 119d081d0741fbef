package runconf

import (
	"fmt"
	"slices"
	"strings"
)

// The service's workflows come in families, each on a task queue of its
// own, so that one family's backlog or slow activities never delay
// another's, and a family's workers can be scaled on their own:
//
//   - credits (CreditPix): the queue named by TEMPORAL_TASK_QUEUE itself,
//     pix-credit by default (the name every credit run has always had);
//   - transfers (the transfer's PixTransfer, saga/transfer; the scheduled
//     PIX's): pix-transfer by default;
//   - maintenance (the retention's, the reconciliation's and the PSP
//     catch-up's Schedules):
//     pix-maintenance by default;
//   - refunds (the devolução's PixRefund, saga/refund; the cautionary
//     block's): pix-refund by default.
//
// TEMPORAL_TASK_QUEUE is the base every family's queue is derived from
// (TaskQueue): the credits' queue is the base; another family's is the base
// with its "credit" replaced by the family's name (pix-credit gives
// pix-transfer and pix-maintenance; pix-credit-e2e1 gives pix-transfer-e2e1
// and pix-maintenance-e2e1). So one base gives distinct queues, no two
// bases give one queue (CheckTaskQueueBase, which the configuration
// applies), and a test isolates all of its queues by choosing a base of
// its own. (A base without "credit", refused since, gave the base
// followed by "-" and the family's name: myq gave myq-transfer.)

// CreditTaskQueue is the default task queue of the credit workflow and its
// activities, and the default base of the other families' queues
// (TEMPORAL_TASK_QUEUE; see above).
const CreditTaskQueue = "pix-credit"

// Family names a family of workflows that share a task queue.
type Family string

// The families. The value is the word a family's queue name is made with.
const (
	Credits     Family = "credit"
	Transfers   Family = "transfer"
	Maintenance Family = "maintenance"
	// Refunds is two sagas' (saga/refund, saga/block): here, below both.
	Refunds Family = "refund"
)

// Families is every family, the credits first: the list a new saga's
// family is registered in (its Family constant lives in the saga's file).
var Families = []Family{
	Credits,
	Transfers,
	Maintenance,
	Refunds,
}

// TaskQueue is the task queue of family f under base (TEMPORAL_TASK_QUEUE),
// by the rule above.
func TaskQueue(base string, f Family) string {
	switch {
	case f == Credits:
		return base
	case strings.Contains(base, string(Credits)):
		return strings.Replace(base, string(Credits), string(f), 1)
	default:
		return base + "-" + string(f)
	}
}

// CheckTaskQueueBase refuses a base (TEMPORAL_TASK_QUEUE) from which the
// rule above could derive a queue that another base derives too: two
// services sharing a namespace, or one service whose base was changed,
// would then poll each other's queues (base myq gives myq-transfer, which
// is the credits' queue of base myq-transfer; base x-credit gives
// x-transfer, as base x does). A base is accepted when its segments (the
// parts between "-") hold "credit" exactly once, and no other family's
// name: each derived queue then holds its family's name in that segment
// and "credit" nowhere, so the credits' queue of one base is never
// another's derived queue, and two bases that derive one queue are the
// same base. It also refuses what Temporal refuses in a Worker
// Deployment's name, which the base is (worker.Version): "." and ":".
func CheckTaskQueueBase(base string) error {
	if strings.ContainsAny(base, ".:") {
		return fmt.Errorf("task queue base %q: must not contain \".\" or \":\" (it names the workers' Worker Deployment)", base)
	}
	if strings.Count(base, string(Credits)) != 1 {
		return fmt.Errorf("task queue base %q: must contain %q exactly once, as a segment between dashes (pix-credit, pix-credit-staging): "+
			"each family's queue is the base with it replaced by the family's name, and only so do two bases never derive one queue", base, Credits)
	}
	segments := strings.Split(base, "-")
	if !slices.Contains(segments, string(Credits)) {
		return fmt.Errorf("task queue base %q: %q must be a segment of its own, between dashes (pix-credit, pix-credit-staging)", base, Credits)
	}
	for _, f := range Families {
		if f != Credits && strings.Contains(base, string(f)) {
			return fmt.Errorf("task queue base %q: must not contain %q, a family's name: another base derives that family's queues with it", base, f)
		}
	}
	return nil
}

// TaskQueues is each family's task queue under one base.
type TaskQueues struct {
	// Base is TEMPORAL_TASK_QUEUE; the Schedules' IDs are made with it.
	Base                            string
	Credits, Transfers, Maintenance string
}

// TaskQueuesFor derives every family's task queue from base
// (TEMPORAL_TASK_QUEUE).
func TaskQueuesFor(base string) TaskQueues {
	return TaskQueues{
		Base:        base,
		Credits:     TaskQueue(base, Credits),
		Transfers:   TaskQueue(base, Transfers),
		Maintenance: TaskQueue(base, Maintenance),
	}
}

// Of is family f's task queue.
func (q TaskQueues) Of(f Family) string {
	switch f {
	case Credits:
		return q.Credits
	case Transfers:
		return q.Transfers
	case Maintenance:
		return q.Maintenance
	}
	return TaskQueue(q.Base, f)
}

// All is every family's task queue, in the order of Families.
func (q TaskQueues) All() []string {
	all := make([]string, len(Families))
	for i, f := range Families {
		all[i] = q.Of(f)
	}
	return all
}
