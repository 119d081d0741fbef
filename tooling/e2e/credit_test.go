//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/workflows"
)

func TestCreditEndToEnd(t *testing.T) {
	s := newStack(t, shared, nil)
	s.openAccount("acc-1", 1000)
	id := pixID()
	ready := s.request(http.MethodGet, "/readyz", nil)
	require.Equal(t, http.StatusOK, ready.Status, "PostgreSQL and Temporal answer: %v", ready.Body)

	r := s.post(webhook{id, "acc-1", 15000})
	require.Equal(t, http.StatusAccepted, r.Status)
	require.Equal(t, map[string]any{"end_to_end_id": id, "status": "pending", "duplicate": false}, r.Body)
	s.waitStatus(id, pix.StatusDone, 30*time.Second)

	require.EqualValues(t, 16000, s.balance("acc-1"))
	got := s.request(http.MethodGet, "/pix/credits/"+id, nil)
	require.Equal(t, http.StatusOK, got.Status)
	require.Equal(t, "done", got.Body["status"])
	require.EqualValues(t, 1, got.Body["attempts"])
	require.NotNil(t, got.Body["processed_at"])
	require.Equal(t, workflows.CreditWorkflowID(id), got.Body["workflow_id"])

	acc := s.request(http.MethodGet, "/accounts/acc-1", nil)
	require.EqualValues(t, 16000, acc.Body["balance_cents"])

	// The row is done when the credit commits; the run closes just after.
	var out workflows.CreditOutput
	require.NoError(t, s.client().GetWorkflow(context.Background(), workflows.CreditWorkflowID(id), "").Get(context.Background(), &out))
	require.True(t, out.Credited)
	desc, err := s.client().DescribeWorkflow(context.Background(), workflows.CreditWorkflowID(id), "")
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.Status)
	s.assertBooksBalance()
	s.recordHistory(workflows.CreditWorkflowID(id), "credit_done_v2")
}

func TestRedeliveryIsAbsorbed(t *testing.T) {
	s := newStack(t, shared, nil)
	s.openAccount("acc-1", 0)
	id := pixID()
	w := webhook{id, "acc-1", 700}

	require.False(t, s.post(w).Body["duplicate"].(bool))
	r := s.post(w)
	require.Equal(t, http.StatusAccepted, r.Status)
	require.True(t, r.Body["duplicate"].(bool))
	s.waitStatus(id, pix.StatusDone, 30*time.Second)

	// A redelivery after the credit: still a duplicate, now reporting done.
	r = s.post(w)
	require.Equal(t, map[string]any{"end_to_end_id": id, "status": "done", "duplicate": true}, r.Body)

	c := s.request(http.MethodGet, "/pix/credits/"+id, nil)
	require.EqualValues(t, 3, c.Body["deliveries"])
	require.Equal(t, 1, s.creditRows(id))
	require.EqualValues(t, 700, s.balance("acc-1"))
	s.assertBooksBalance()
}

func TestConcurrentCopiesCreditOnce(t *testing.T) {
	s := newStack(t, shared, nil)
	s.openAccount("acc-1", 0)
	id := pixID()
	const copies = 50

	var wg sync.WaitGroup
	start := make(chan struct{})
	replies := make([]reply, copies)
	for i := range copies {
		wg.Go(func() {
			<-start
			replies[i] = s.post(webhook{id, "acc-1", 999})
		})
	}
	close(start)
	wg.Wait()

	firsts := 0
	for _, r := range replies {
		require.Equal(t, http.StatusAccepted, r.Status, "%v", r.Body)
		if !r.Body["duplicate"].(bool) {
			firsts++
		}
	}
	require.Equal(t, 1, firsts, "exactly one copy is the first delivery")
	s.waitStatus(id, pix.StatusDone, 30*time.Second)
	c := s.request(http.MethodGet, "/pix/credits/"+id, nil)
	require.EqualValues(t, copies, c.Body["deliveries"])
	require.Equal(t, 1, s.creditRows(id))
	require.EqualValues(t, 999, s.balance("acc-1"))
	s.assertBooksBalance()
}

// Temporal runs an activity at least once: a second run of the credit for a
// PIX that is already credited must change nothing.
func TestCreditRunAgainAfterCommitChangesNothing(t *testing.T) {
	s := newStack(t, shared, nil)
	s.openAccount("acc-1", 100)
	id := pixID()
	s.post(webhook{id, "acc-1", 50})
	s.waitStatus(id, pix.StatusDone, 30*time.Second)

	ctx := context.Background()
	first := s.client().GetWorkflow(ctx, workflows.CreditWorkflowID(id), "")
	require.NoError(t, first.Get(ctx, nil), "the first run closes")
	run, err := s.client().ExecuteWorkflow(ctx, clientOptions(s, id), workflows.CreditWorkflowName,
		workflows.CreditInput{EndToEndID: id, Retry: s.cfg.Retry()})
	require.NoError(t, err)
	require.NotEqual(t, first.GetRunID(), run.GetRunID(), "a new run")
	require.NoError(t, err)
	var out workflows.CreditOutput
	require.NoError(t, run.Get(ctx, &out))
	require.False(t, out.Credited, "the second run found the PIX credited")
	require.EqualValues(t, 150, out.BalanceAfter)
	require.EqualValues(t, 150, s.balance("acc-1"))
	require.Equal(t, 1, s.creditRows(id))
	s.assertBooksBalance()
}

func TestPayloadMismatchChangesNothing(t *testing.T) {
	s := newStack(t, shared, nil)
	s.openAccount("acc-1", 0)
	s.openAccount("acc-2", 0)
	id := pixID()
	s.post(webhook{id, "acc-1", 100})

	for _, w := range []webhook{{id, "acc-1", 101}, {id, "acc-2", 100}} {
		r := s.post(w)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status)
		require.Equal(t, "payload_mismatch", r.Body["error"].(map[string]any)["code"])
	}
	s.waitStatus(id, pix.StatusDone, 30*time.Second)
	c := s.request(http.MethodGet, "/pix/credits/"+id, nil)
	require.EqualValues(t, 1, c.Body["deliveries"])
	require.EqualValues(t, 100, s.balance("acc-1"))
	require.EqualValues(t, 0, s.balance("acc-2"))
	s.assertBooksBalance()
}

// A PIX to an unknown account is retried INBOX_ATTEMPTS_MAX times and ends
// failed, while PIX to other accounts are credited meanwhile.
func TestUnknownAccountFailsAloneAfterAttempts(t *testing.T) {
	s := newStack(t, shared, func(c *config.Config) {
		c.InboxAttemptsMax = 3
		c.InboxRetryInitial = time.Second
	})
	s.openAccount("acc-1", 0)
	s.openAccount("acc-2", 0)
	lost := pixID()
	require.Equal(t, http.StatusAccepted, s.post(webhook{lost, "acc-unknown", 500}).Status)
	var others []string
	for i := range 6 {
		id := pixID()
		others = append(others, id)
		require.Equal(t, http.StatusAccepted, s.post(webhook{id, []string{"acc-1", "acc-2"}[i%2], 10}).Status)
	}
	for _, id := range others {
		s.waitStatus(id, pix.StatusDone, 30*time.Second)
	}
	s.waitStatus(lost, pix.StatusFailed, 60*time.Second)

	ctx := context.Background()
	failed, err := s.store.GetCredit(ctx, lost)
	require.NoError(t, err)
	require.Equal(t, 3, failed.Attempts)
	require.Contains(t, *failed.LastError, "AccountNotFound")
	for _, id := range others {
		c, err := s.store.GetCredit(ctx, id)
		require.NoError(t, err)
		require.True(t, c.ProcessedAt.Before(*failed.ProcessedAt), "PIX %s was credited while the unknown account's PIX was still retrying", id)
	}
	require.EqualValues(t, 30, s.balance("acc-1"))
	require.EqualValues(t, 30, s.balance("acc-2"))

	runErr := s.client().GetWorkflow(ctx, workflows.CreditWorkflowID(lost), "").Get(ctx, nil)
	require.ErrorContains(t, runErr, "AccountNotFound")
	desc, err := s.client().DescribeWorkflow(ctx, workflows.CreditWorkflowID(lost), "")
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_FAILED, desc.Status, "the failed PIX shows failed in Temporal")
	s.assertBooksBalance()
	s.recordHistory(workflows.CreditWorkflowID(lost), "credit_failed_v2")
}

func TestClosedAccountFailsAtOnce(t *testing.T) {
	s := newStack(t, shared, func(c *config.Config) { c.InboxAttemptsMax = 5 })
	s.openAccount("acc-closed", 0)
	require.NoError(t, s.store.CloseAccount(context.Background(), "acc-closed"))
	id := pixID()
	s.post(webhook{id, "acc-closed", 100})
	s.waitStatus(id, pix.StatusFailed, 30*time.Second)
	c, err := s.store.GetCredit(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, 1, c.Attempts, "a non-retryable error is not retried")
	require.Contains(t, *c.LastError, "AccountClosed")
	require.EqualValues(t, 1, s.metric("pix_credit_failures_total{AccountClosed}"))
}

// A failed PIX is re-driven, by the admin route or by a PSP redelivery, once
// its account exists, and is credited exactly once.
func TestRedriveAfterAccountIsCreated(t *testing.T) {
	s := newStack(t, shared, func(c *config.Config) { c.InboxAttemptsMax = 2 })
	byAdmin, byRedelivery := pixID(), pixID()
	s.post(webhook{byAdmin, "acc-late", 100})
	s.post(webhook{byRedelivery, "acc-late", 200})
	s.waitStatus(byAdmin, pix.StatusFailed, 60*time.Second)
	s.waitStatus(byRedelivery, pix.StatusFailed, 60*time.Second)

	s.openAccount("acc-late", 0)
	r := s.request(http.MethodPost, "/admin/pix/credits/"+byAdmin+"/retry", nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%v", r.Body)
	r = s.post(webhook{byRedelivery, "acc-late", 200})
	require.Equal(t, map[string]any{"end_to_end_id": byRedelivery, "status": "pending", "duplicate": true}, r.Body)

	s.waitStatus(byAdmin, pix.StatusDone, 30*time.Second)
	s.waitStatus(byRedelivery, pix.StatusDone, 30*time.Second)
	require.EqualValues(t, 300, s.balance("acc-late"))
	c, err := s.store.GetCredit(context.Background(), byAdmin)
	require.NoError(t, err)
	require.Equal(t, 3, c.Attempts, "attempts keep counting across the re-drive")

	r = s.request(http.MethodPost, "/admin/pix/credits/"+byAdmin+"/retry", nil)
	require.Equal(t, http.StatusConflict, r.Status, "a done PIX is not re-driven")
	require.Equal(t, 1, s.creditRows(byAdmin))
	require.Equal(t, 1, s.creditRows(byRedelivery))
	s.assertBooksBalance()
}

// With Temporal down, webhooks are still acknowledged, and every one is
// credited once after Temporal returns, with no human action.
func TestTemporalDownWhileWebhooksArrive(t *testing.T) {
	srv := temporaltest.StartT(t)
	s := newStack(t, srv, nil)
	s.openAccount("acc-1", 0)

	srv.Stop()
	var ids []string
	for range 10 {
		id := pixID()
		ids = append(ids, id)
		r := s.post(webhook{id, "acc-1", 100})
		require.Equal(t, http.StatusAccepted, r.Status, "the acknowledgement never depends on Temporal")
	}
	// A redelivery while Temporal is down is absorbed as well.
	require.True(t, s.post(webhook{ids[0], "acc-1", 100}).Body["duplicate"].(bool))
	time.Sleep(time.Second) // the dispatcher tries, fails, and backs off
	for _, id := range ids {
		require.Equal(t, pix.StatusPending, s.status(id))
	}

	require.NoError(t, srv.Restart())
	for _, id := range ids {
		s.waitStatus(id, pix.StatusDone, 90*time.Second)
		require.Equal(t, 1, s.creditRows(id))
	}
	require.EqualValues(t, 1000, s.balance("acc-1"))
	s.assertBooksBalance()
}

// A worker process started while Temporal is down waits for it, then works:
// nothing acknowledged meanwhile is lost.
func TestWorkerStartedBeforeTemporal(t *testing.T) {
	srv := temporaltest.StartT(t)
	srv.Stop()
	s := startStackUnpromoted(t, srv, nil, nil) // nothing promotes its build until Temporal is back
	s.openAccount("acc-1", 0)
	id := pixID()
	require.Equal(t, http.StatusAccepted, s.post(webhook{id, "acc-1", 42}).Status)
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, srv.Restart())
	s.waitStatus(id, pix.StatusDone, 90*time.Second)
	require.EqualValues(t, 42, s.balance("acc-1"))
}
