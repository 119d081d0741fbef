package workflows

import "strings"

// The service's workflows come in families, each on a task queue of its
// own, so that one family's backlog or slow activities never delay
// another's, and a family's workers can be scaled on their own:
//
//   - credits (CreditPix): the queue named by TEMPORAL_TASK_QUEUE itself,
//     pix-credit by default (the name every credit run has always had);
//   - transfers (TransferPix): pix-transfer by default;
//   - maintenance (the retention's, the reconciliation's and the PSP
//     catch-up's Schedules):
//     pix-maintenance by default.
//
// TEMPORAL_TASK_QUEUE is the base every family's queue is derived from
// (TaskQueue): the credits' queue is the base; another family's is the base
// with its first "credit" replaced by the family's name (pix-credit gives
// pix-transfer and pix-maintenance; pix-credit-e2e1 gives pix-transfer-e2e1
// and pix-maintenance-e2e1), or, when the base has no "credit", the base
// followed by "-" and the family's name (myq gives myq-transfer). So one
// base gives distinct queues, and a test isolates all of its queues by
// choosing a base of its own.

// Family names a family of workflows that share a task queue.
type Family string

// The families. The value is the word a family's queue name is made with.
const (
	Credits     Family = "credit"
	Transfers   Family = "transfer"
	Maintenance Family = "maintenance"
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
