package durable

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// Workflow is what StartOnce starts: a workflow type under its business
// key, on its family's task queue, listed in the Temporal UI.
type Workflow struct {
	ID               string
	TaskQueue        string
	Name             string
	SearchAttributes temporal.SearchAttributes
	Memo             map[string]any
}

// StartOnce starts w with input unless a run is open under w.ID:
// started=false then, which is not an error. A closed run (failed, or
// completed) does not prevent a new one (ALLOW_DUPLICATE): re-drives and
// rechecks start new runs under the same business key.
func StartOnce(ctx context.Context, c client.Client, w Workflow, input any) (started bool, err error) {
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    w.ID,
		TaskQueue:             w.TaskQueue,
		TypedSearchAttributes: w.SearchAttributes,
		Memo:                  w.Memo,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// With a worker for the task queue on the same client (the
		// dispatcher runs in the worker process), the first workflow task
		// comes back with the start and runs at once.
		EnableEagerStart: true,
		// Tell an open run apart from a new one: after a re-drive, the
		// failed run may still be closing.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, w.Name, input)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &already):
		return false, nil
	default:
		return false, fmt.Errorf("start workflow %s: %w", w.ID, err)
	}
}
