package worker

import (
	"context"

	"go.temporal.io/sdk/client"
)

// StartsOnTheCurrentBuild is c, except that the workflows it starts are
// never started eagerly: Temporal routes their first workflow task to the
// deployment's current build. The dispatchers start their runs eagerly
// (durable.StartOnce), and an eager start runs the first task on the
// starting worker's own build, whatever build is current; a pinned run
// then stays on that build to its end. A build that is draining (an
// upgrade made another current, or a rollback) still runs its dispatchers,
// so every transfer or devolução it started would be pinned to the build
// about to be stopped, and stranded there once it is (debited, neither
// sent nor refunded). The dispatchers of a pinned saga start through
// this client instead: a few milliseconds more per start (the first task
// goes through matching), and the run begins on the build an operator
// made current. TestAPinnedSagaStartedByADrainingBuildRunsOnTheCurrentOne.
func StartsOnTheCurrentBuild(c client.Client) client.Client { return currentBuildStarts{c} }

type currentBuildStarts struct{ client.Client }

func (c currentBuildStarts) ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error) {
	options.EnableEagerStart = false
	return c.Client.ExecuteWorkflow(ctx, options, workflow, args...)
}
