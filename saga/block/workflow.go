package block

import (
	"context"
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
const WorkflowName = "PixBlock"

// ChangedSignal wakes a run after its block was released or returned
// (the routes send it after their commit): the run reads the block and
// goes on as it says. A signal without a change changes nothing.
const ChangedSignal = "changed"

// WorkflowID is the id of the saga's run of block id.
func WorkflowID(id string) string { return "pix-block:" + id }

// Input starts the saga of one block.
type Input struct {
	ID string
}

// The wait for a returning block's devolução: the block's run reads it
// after SettleFirst, then at twice the interval before, at most
// SettleEvery. A devolução's own run waits for the PSP's outcome (a day
// by default); the block ends at most SettleEvery after it.
const (
	SettleFirst = 10 * time.Second
	SettleEvery = 30 * time.Minute
	// settleTurns is how many reads one run makes before it continues as
	// new: its history stays bounded however long the devolução takes.
	settleTurns = 200
)

// activityOptions retry the database until it answers; a block that does
// not exist ends the run.
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

// Workflow is the saga of one block: it reads the block, sleeps on a
// durable timer until its expires_at (72 hours), then releases it
// (ExpireBlock). A release or a return wakes it early (ChangedSignal):
// the block, read again, says whether it still waits. A returning block
// waits for its devolução to end (SettleBlock, read at growing intervals):
// returned, or released when the devolução was not made. The run's result
// is the block as it ended.
func Workflow(ctx workflow.Context, in Input) (Block, error) {
	ctx = workflow.WithActivityOptions(ctx, activityOptions())
	var a *Activities
	var b Block
	load := func(ctx workflow.Context) error {
		return workflow.ExecuteActivity(ctx, a.LoadBlock, in.ID).Get(ctx, &b)
	}
	if err := load(ctx); err != nil {
		return b, err
	}
	timer := sagakit.Timer{Signals: []string{ChangedSignal}, Reread: load,
		Until: func() (time.Time, bool) { return b.ExpiresAt, b.Status == StatusActive }}
	if err := timer.Sleep(ctx); err != nil {
		return b, err
	}
	if b.Status == StatusActive {
		if err := workflow.ExecuteActivity(ctx, a.ExpireBlock, in.ID).Get(ctx, &b); err != nil {
			return b, err
		}
	}
	wait := SettleFirst
	for turn := 0; b.Status == StatusReturning; turn++ {
		if turn == settleTurns {
			return b, workflow.NewContinueAsNewError(ctx, WorkflowName, in)
		}
		if err := workflow.Sleep(ctx, wait); err != nil {
			return b, err
		}
		if err := workflow.ExecuteActivity(ctx, a.SettleBlock, in.ID).Get(ctx, &b); err != nil {
			return b, err
		}
		wait = min(2*wait, SettleEvery)
	}
	return b, nil
}

// Source is the durable start of the saga: a run for each open block,
// started at its creation, and again if lost.
func Source(q durable.Queue, taskQueue string) durable.Source {
	return durable.Source{
		Kind:  "block",
		Queue: q,
		Start: func(ctx context.Context, c client.Client, due durable.Due) (bool, error) {
			return workflows.StartDue(ctx, c, due, WorkflowID(due.Key), taskQueue, WorkflowName, Input{ID: due.Key})
		},
		LogAttrs: func(due durable.Due) []any {
			return []any{"block_id", due.Key, "workflow_id", WorkflowID(due.Key)}
		},
	}
}
