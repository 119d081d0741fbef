package scheduled

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/sagakit"
	"github.com/pixbank/pix/workflows"
)

// WorkflowName is the saga's workflow type, recorded in every run's
// history: never change it.
const WorkflowName = "PixScheduled"

// CancelSignal wakes a sleeping run after its row was cancelled
// (DELETE /pix/scheduled/{id}): the run reads the row and ends as it says.
// A signal without a cancelled row changes nothing.
const CancelSignal = "cancel"

// WorkflowID is the id of the saga's run of scheduled PIX id.
func WorkflowID(id string) string { return "pix-scheduled:" + id }

// Input starts the saga of one scheduled PIX.
type Input struct {
	ID string
}

// activityOptions retry the database until it answers; a scheduled PIX
// that does not exist ends the run.
func activityOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			NonRetryableErrorTypes: pix.NonRetryableTypes(),
		},
	}
}

// Workflow is the saga of one scheduled PIX: it reads the row, sleeps on a
// durable timer until its run_at, then runs it (RunScheduled: debit and
// hand-over to the transfer saga, or failed, nothing debited). A cancel
// signal wakes it early: the row, read again, says whether it was
// cancelled (the run ends so) or not (it sleeps again). The run's result
// is the row as it concluded.
func Workflow(ctx workflow.Context, in Input) (Scheduled, error) {
	ctx = workflow.WithActivityOptions(ctx, activityOptions())
	var a *Activities
	var s Scheduled
	load := func(ctx workflow.Context) error {
		return workflow.ExecuteActivity(ctx, a.LoadScheduled, in.ID).Get(ctx, &s)
	}
	if err := load(ctx); err != nil {
		return s, err
	}
	timer := sagakit.Timer{Signals: []string{CancelSignal}, Reread: load,
		Until: func() (time.Time, bool) { return s.RunAt, s.Status == StatusScheduled }}
	if err := timer.Sleep(ctx); err != nil {
		return s, err
	}
	if s.Status != StatusScheduled {
		return s, nil
	}
	err := workflow.ExecuteActivity(ctx, a.RunScheduled, in.ID).Get(ctx, &s)
	return s, err
}

// Source is the durable start of the saga: a run for each scheduled PIX
// still to run, started at its creation, and again if lost (at its
// run_at at the earliest: the queue's NotBefore).
func Source(q durable.Queue, taskQueue string) durable.Source {
	return durable.Source{
		Kind:  "scheduled",
		Queue: q,
		Start: func(ctx context.Context, c client.Client, due durable.Due) (bool, error) {
			return workflows.StartDue(ctx, c, due, WorkflowID(due.Key), taskQueue, WorkflowName, Input{ID: due.Key})
		},
		LogAttrs: func(due durable.Due) []any {
			return []any{"scheduled_id", due.Key, "workflow_id", WorkflowID(due.Key)}
		},
	}
}

// CancelWakes is what WakeSource needs of the store: the end of a
// cancel's wake-up (Store.EndCancelWake).
type CancelWakes interface {
	EndCancelWake(ctx context.Context, id string) error
}

// WakeKind names the wake dispatcher's rows in logs and metrics
// (pix_dispatch_starts_total{kind="scheduled_cancel_wake"}: outcome open
// is a wake-up done, failed a signal to retry).
const WakeKind = "scheduled_cancel_wake"

// WakeSource is the durable wake-up of a cancel: for each entry of the
// wake queue (pix_scheduled_cancel_wakes, written by the cancel that
// concluded its row), it signals the run (CancelSignal), asleep until the
// PIX's date, and never starts one: the route's own signal may have been
// lost (Temporal unreachable, or its client reconnecting). A signal
// delivered, or no run open (never started, or closed), ends the entry
// (ends); a signal that fails leaves it due, tried again after the
// dispatcher's backoff. A run started later by a claim of the saga's queue
// made before the cancel reads the row first and ends cancelled at once.
// The dispatcher counts a wake-up done as a run found open
// (durable.StartedOpen): nothing started.
func WakeSource(q durable.Queue, ends CancelWakes) durable.Source {
	return durable.Source{
		Kind:  WakeKind,
		Queue: q,
		Start: func(ctx context.Context, c client.Client, due durable.Due) (bool, error) {
			return false, wakeCancelled(ctx, c, ends, due.Key)
		},
		LogAttrs: func(due durable.Due) []any {
			return []any{"scheduled_id", due.Key, "workflow_id", WorkflowID(due.Key)}
		},
	}
}

// wakeCancelled signals the run of the cancelled scheduled PIX id, then
// ends its wake-up.
func wakeCancelled(ctx context.Context, s sagakit.Signaller, ends CancelWakes, id string) error {
	if _, err := sagakit.Signal(ctx, s, WorkflowID(id), CancelSignal, nil); err != nil {
		return fmt.Errorf("wake the run of cancelled scheduled pix %s: %w", id, err)
	}
	return ends.EndCancelWake(ctx, id)
}
