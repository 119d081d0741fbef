package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/workflows"
)

// Histories recorded from real runs on a Temporal dev server (`temporal
// workflow show -o json`) must replay against the current code: a change
// that would break running workflows fails here. Record new ones when the
// workflow changes on purpose, and keep the old ones while such runs may
// still be open (or version the change with workflow.GetVersion).
func TestReplayRecordedHistories(t *testing.T) {
	for _, file := range []string{
		"testdata/credit_done.json",       // credited at the first attempt
		"testdata/credit_failed.json",     // unknown account: attempts exhausted, marked failed
		"testdata/transfer_settled.json",  // submitted, polled until settled, marked settled
		"testdata/transfer_refunded.json", // rejected by the PSP at submission, refunded
	} {
		t.Run(file, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(workflows.CreditPix, workflow.RegisterOptions{Name: workflows.CreditWorkflowName})
			r.RegisterWorkflowWithOptions(workflows.TransferPix, workflow.RegisterOptions{Name: workflows.TransferWorkflowName})
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, file))
		})
	}
}
