package workflows_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/workflows"
)

// Why CREDIT_LISTING_IN_INPUT exists: a worker of a release before the
// listing version in the input (workflows.PreListingVersionCreditPix, that
// release's CreditPix verbatim) can't go on with a run whose input names
// version 2 as the new code does. The run has no version marker, so the
// old code's GetVersion, asked in replay, answers DefaultVersion, and the
// old code then upserts nothing: the recorded v2 histories replayed on the
// old code miss the PixStatus upsert. (Found by the attack review of the
// cheaper credit.) Why it stays with Worker Versioning (worker.Version):
// the credit auto-upgrades, and versioning moves it between versioned
// builds only, which all read the field; those releases predate it, so an
// upgrade from one, or a rollback to one, still needs the setting.
func TestAnOldWorkerCannotGoOnWithAListingVersion2Run(t *testing.T) {
	quiet := sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))
	for _, file := range []string{"testdata/credit_done_v2.json", "testdata/credit_failed_v2.json"} {
		t.Run(file, func(t *testing.T) {
			r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{})
			require.NoError(t, err)
			r.RegisterWorkflowWithOptions(workflows.PreListingVersionCreditPix, workflow.RegisterOptions{Name: workflows.CreditWorkflowName})
			err = r.ReplayWorkflowHistoryFromJSONFile(quiet, file)
			require.ErrorContains(t, err, "UpsertWorkflowSearchAttributes",
				"an old worker computes a different run from the same v2 history: it leaves out the PixStatus upsert")
		})
	}
}

// A rolling upgrade from such a release, live: with CREDIT_LISTING_IN_INPUT
// off, the dispatcher's credit (its input names no listing version) begun
// by a new worker (eager start), whose first round fails technically (the
// database unreachable: the run sleeps), is finished by an old worker once
// the database is back, and is listed done with its account, as the new
// code lists it. (With the setting on, the same run stays listed pending:
// TestAnOldWorkerCannotGoOnWithAListingVersion2Run.)
func TestARollingUpgradeListsACreditDone(t *testing.T) {
	srv := temporaltest.StartT(t)
	c := srv.Client(t)
	cfg := config.Default()
	cfg.CreditListingInInput = false // CREDIT_LISTING_IN_INPUT=false: the upgrade's setting
	for _, version := range []workflow.Version{workflows.CreditInputListingVersion(cfg.CreditListingInInput)} {
		t.Run(fmt.Sprintf("ListingVersion=%d", version), func(t *testing.T) {
			tq := fmt.Sprintf("rollout-%d-%d", version, time.Now().UnixNano())
			id := fmt.Sprintf("E%031d", time.Now().UnixNano()%1e15*10+int64(version))
			retry := runconf.RetrySettings{MaxAttempts: 1, InitialInterval: payload.Duration(100 * time.Millisecond), BackoffCoefficient: 2,
				MaxInterval: payload.Duration(2 * time.Second), ActivityTimeout: payload.Duration(5 * time.Second)}

			// The new worker; the database is down.
			newWorker := worker.New(c, tq, worker.Options{})
			newWorker.RegisterWorkflowWithOptions(workflows.CreditPix, workflow.RegisterOptions{Name: workflows.CreditWorkflowName})
			newWorker.RegisterActivityWithOptions(func(context.Context, activities.CreditInput) (activities.CreditResult, error) {
				return activities.CreditResult{}, temporal.NewApplicationError("database unreachable", activities.ErrTypeTechnicalFailure)
			}, activity.RegisterOptions{Name: "CreditAccount"})
			require.NoError(t, newWorker.Start())

			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			started, err := workflows.StartCredit(ctx, c, tq, workflows.CreditInput{
				EndToEndID: id, Retry: retry, ListingVersion: version,
			}, workflows.Listing{EndToEndID: id, AmountCents: 100, Status: pix.StatusPending})
			require.NoError(t, err)
			require.True(t, started)
			waitForEvent(ctx, t, c, workflows.CreditWorkflowID(id), enumspb.EVENT_TYPE_TIMER_STARTED)
			newWorker.Stop()

			// The old worker; the database is back.
			oldWorker := worker.New(c, tq, worker.Options{})
			oldWorker.RegisterWorkflowWithOptions(workflows.PreListingVersionCreditPix, workflow.RegisterOptions{Name: workflows.CreditWorkflowName})
			oldWorker.RegisterActivityWithOptions(func(context.Context, activities.CreditInput) (activities.CreditResult, error) {
				return activities.CreditResult{AccountID: "acc-rollout", AmountCents: 100, Credited: true, BalanceAfter: 100}, nil
			}, activity.RegisterOptions{Name: "CreditAccount"})
			require.NoError(t, oldWorker.Start())
			defer oldWorker.Stop()

			var out workflows.CreditOutput
			require.NoError(t, c.GetWorkflow(ctx, workflows.CreditWorkflowID(id), "").Get(ctx, &out))
			require.True(t, out.Credited, "the PIX was credited")

			desc, err := c.DescribeWorkflow(ctx, workflows.CreditWorkflowID(id), "")
			require.NoError(t, err)
			fields := desc.RawResponse.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
			var status, account string
			require.NoError(t, converter.GetDefaultDataConverter().FromPayload(fields[workflows.AttrStatus.GetName()], &status))
			if p := fields[workflows.AttrAccountID.GetName()]; p != nil {
				require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &account))
			}
			require.Equal(t, pix.StatusDone, status, "the credited PIX's run is listed PixStatus=%q", status)
			require.Equal(t, "acc-rollout", account, "the credited PIX's run names its account")
		})
	}
}

func waitForEvent(ctx context.Context, t *testing.T, c client.Client, id string, want enumspb.EventType) {
	t.Helper()
	for {
		it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			require.NoError(t, err)
			if e.GetEventType() == want {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no %s in %s's history", want, id)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// The same, the failure path: with CREDIT_LISTING_IN_INPUT off, a credit
// begun by a new worker whose account is closed (a final business failure:
// the run schedules MarkCreditFailed), the failure recorded and the run
// closed by an old worker, is listed failed, so that the operators' query
// (docs/operations.md: PixStatus = 'failed') finds it.
func TestARollingUpgradeListsACreditFailed(t *testing.T) {
	srv := temporaltest.StartT(t)
	c := srv.Client(t)
	cfg := config.Default()
	cfg.CreditListingInInput = false // CREDIT_LISTING_IN_INPUT=false: the upgrade's setting
	for _, version := range []workflow.Version{workflows.CreditInputListingVersion(cfg.CreditListingInInput)} {
		t.Run(fmt.Sprintf("ListingVersion=%d", version), func(t *testing.T) {
			tq := fmt.Sprintf("rolloutf-%d-%d", version, time.Now().UnixNano())
			id := fmt.Sprintf("E%031d", time.Now().UnixNano()%1e15*10+int64(version))
			retry := runconf.RetrySettings{MaxAttempts: 1, InitialInterval: payload.Duration(100 * time.Millisecond), BackoffCoefficient: 2,
				MaxInterval: payload.Duration(2 * time.Second), ActivityTimeout: payload.Duration(5 * time.Second)}

			// The new worker runs the workflow and its local activity only:
			// MarkCreditFailed waits on the queue for the old worker.
			newWorker := worker.New(c, tq, worker.Options{LocalActivityWorkerOnly: true})
			newWorker.RegisterWorkflowWithOptions(workflows.CreditPix, workflow.RegisterOptions{Name: workflows.CreditWorkflowName})
			newWorker.RegisterActivityWithOptions(func(context.Context, activities.CreditInput) (activities.CreditResult, error) {
				return activities.CreditResult{}, temporal.NewNonRetryableApplicationError("account is closed", activities.ErrTypeAccountClosed, nil)
			}, activity.RegisterOptions{Name: "CreditAccount"})
			require.NoError(t, newWorker.Start())

			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			started, err := workflows.StartCredit(ctx, c, tq, workflows.CreditInput{
				EndToEndID: id, Retry: retry, ListingVersion: version,
			}, workflows.Listing{EndToEndID: id, AccountID: "acc-closed", AmountCents: 100, Status: pix.StatusPending})
			require.NoError(t, err)
			require.True(t, started)
			waitForEvent(ctx, t, c, workflows.CreditWorkflowID(id), enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
			newWorker.Stop()

			oldWorker := worker.New(c, tq, worker.Options{})
			oldWorker.RegisterWorkflowWithOptions(workflows.PreListingVersionCreditPix, workflow.RegisterOptions{Name: workflows.CreditWorkflowName})
			oldWorker.RegisterActivityWithOptions(func(context.Context, activities.MarkFailedInput) (activities.MarkFailedResult, error) {
				return activities.MarkFailedResult{Status: pix.StatusFailed}, nil
			}, activity.RegisterOptions{Name: "MarkCreditFailed"})
			require.NoError(t, oldWorker.Start())
			defer oldWorker.Stop()

			require.Error(t, c.GetWorkflow(ctx, workflows.CreditWorkflowID(id), "").Get(ctx, nil), "the run fails")
			desc, err := c.DescribeWorkflow(ctx, workflows.CreditWorkflowID(id), "")
			require.NoError(t, err)
			var status string
			require.NoError(t, converter.GetDefaultDataConverter().FromPayload(
				desc.RawResponse.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[workflows.AttrStatus.GetName()], &status))
			require.Equal(t, pix.StatusFailed, status, "the failed PIX's run is listed PixStatus=%q", status)
		})
	}
}
