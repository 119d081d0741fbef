//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/transfer"
	"github.com/pixbank/pix/workflows"
)

// list runs a visibility query on the stack's task queues until it returns
// exactly want runs (visibility is eventually consistent), and returns them.
func (s *stack) list(query string, want int) []*workflow.WorkflowExecutionInfo {
	s.t.Helper()
	query = s.taskQueuesQuery() + " AND " + query
	var runs []*workflow.WorkflowExecutionInfo
	require.Eventually(s.t, func() bool {
		resp, err := s.client().ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		require.NoError(s.t, err)
		runs = resp.GetExecutions()
		return len(runs) == want
	}, 30*time.Second, 200*time.Millisecond, "query %q never listed %d runs", query, want)
	return runs
}

// searchAttribute decodes one search attribute of a listed run.
func searchAttribute[T any](t *testing.T, run *workflow.WorkflowExecutionInfo, name string) T {
	t.Helper()
	var v T
	payload, ok := run.GetSearchAttributes().GetIndexedFields()[name]
	require.True(t, ok, "run %s has no search attribute %s", run.GetExecution().GetWorkflowId(), name)
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(payload, &v))
	return v
}

// The Temporal UI's search works on what the runs carry: every PIX run is
// started with its search attributes and memo, and its status is upserted as
// it moves.
func TestTemporalSearchFindsEachPix(t *testing.T) {
	s := newStack(t, shared, func(c *config.Config) { c.InboxAttemptsMax = 2 })
	account := "acc-search-" + randomSuffix()
	missing := "acc-missing-" + randomSuffix()
	s.openAccount(account, 100_000)

	credited := pixID()
	r := s.request(http.MethodPost, "/webhooks/pix", map[string]any{
		"end_to_end_id": credited, "account_id": account, "amount_cents": 2_500,
		"payer": map[string]any{"name": "Joana Dias", "document": "12345678901", "ispb": "12345678"},
	})
	require.Equal(t, http.StatusAccepted, r.Status, "%v", r.Body)
	lost := pixID()
	require.Equal(t, http.StatusAccepted, s.post(webhook{lost, missing, 900}).Status)
	sent := s.sendPix(uuid.NewString(), account, 1_000, "maria@example.com")
	require.Equal(t, http.StatusCreated, sent.Status, "%v", sent.Body)
	s.waitStatus(credited, pix.StatusDone, 30*time.Second)
	s.waitStatus(lost, pix.StatusFailed, 30*time.Second)
	s.waitTransfer(sent.Body["id"].(string), pix.TransferSettled, 30*time.Second)

	// The on-call query: this account's PIX that are done, by end_to_end_id.
	runs := s.list(fmt.Sprintf("PixAccountId = '%s' AND PixStatus = 'done' AND PixEndToEndId = '%s'", account, credited), 1)
	run := runs[0]
	require.Equal(t, workflows.CreditWorkflowID(credited), run.GetExecution().GetWorkflowId())
	require.EqualValues(t, 2_500, searchAttribute[int64](t, run, "PixAmountCents"))
	require.Equal(t, "e2e-psp", searchAttribute[string](t, run, "PixPsp"))
	var payer map[string]any
	require.NoError(t, s.dataConverter().FromPayload(run.GetMemo().GetFields()["payer"], &payer))
	require.Equal(t, "Joana Dias", payer["name"])

	require.Equal(t, "Completed", s.request(http.MethodGet, "/pix/credits/"+credited, nil).Body["workflow_status"])

	// A failed PIX is found by its account, which the start named; the
	// status was upserted to failed.
	failed := s.list(fmt.Sprintf("PixAccountId = '%s' AND PixStatus = 'failed'", missing), 1)
	require.Equal(t, workflows.CreditWorkflowID(lost), failed[0].GetExecution().GetWorkflowId())
	s.list(fmt.Sprintf("PixAccountId = '%s' AND PixStatus = 'pending'", missing), 0)

	// The outgoing PIX moved debited -> submitted -> settled.
	outgoing := s.list(fmt.Sprintf("WorkflowType = '%s' AND PixAccountId = '%s' AND PixStatus = 'settled'", transfer.WorkflowName, account), 1)
	require.EqualValues(t, 1_000, searchAttribute[int64](t, outgoing[0], "PixAmountCents"))
	require.Equal(t, sent.Body["end_to_end_id"], searchAttribute[string](t, outgoing[0], "PixEndToEndId"))
}
