//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/workflows"
)

// The process that committed the inbox row died before starting the
// workflow (here: an API without a dispatcher). Another process's dispatcher
// finds the row due and starts it.
func TestCommittedRowWithoutStartIsPickedUpByAnotherDispatcher(t *testing.T) {
	api := newStack(t, shared, func(c *config.Config) { c.DispatcherEnabled = false })
	api.openAccount("acc-1", 0)
	id := pixID()
	require.Equal(t, http.StatusAccepted, api.post(webhook{id, "acc-1", 321}).Status)
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, pix.StatusPending, api.status(id), "nothing started it yet")

	// A second process on the same database and task queue, with a dispatcher.
	newStack(t, shared, func(c *config.Config) {
		c.DatabaseURL = api.cfg.DatabaseURL
		c.TemporalTaskQueue = api.cfg.TemporalTaskQueue
	})
	api.waitStatus(id, pix.StatusDone, 30*time.Second)
	require.EqualValues(t, 321, api.balance("acc-1"))
	api.assertBooksBalance()
}

// A pending row whose run disappeared (terminated by hand, or lost by a
// Temporal server without persistence) is started again at the recheck.
func TestPendingRowWhoseRunWasTerminatedIsStartedAgain(t *testing.T) {
	s := newStack(t, shared, func(c *config.Config) {
		c.InboxAttemptsMax = 100
		c.InboxRetryInitial = 5 * time.Second
		c.InboxRetryMaxInterval = 5 * time.Second
		c.DispatchRecheckAfter, c.DispatchRecheckMax = time.Second, time.Second
	})
	id := pixID()
	s.post(webhook{id, "acc-soon", 55})
	ctx := context.Background()
	require.Eventually(t, func() bool {
		c, err := s.store.GetCredit(ctx, id)
		return err == nil && c.Attempts >= 1
	}, 30*time.Second, 50*time.Millisecond, "the first attempt ran")

	require.NoError(t, s.client().TerminateWorkflow(ctx, workflows.CreditWorkflowID(id), "", "test: run lost"))
	s.openAccount("acc-soon", 0)
	s.waitStatus(id, pix.StatusDone, 30*time.Second)
	require.EqualValues(t, 55, s.balance("acc-soon"))
	s.assertBooksBalance()
}

// Two dispatchers over the same rows start each workflow once: claims skip
// rows another dispatcher holds.
func TestTwoDispatchersStartEachWorkflowOnce(t *testing.T) {
	s := newStack(t, shared, func(c *config.Config) { c.DispatcherEnabled = false })
	s.openAccount("acc-1", 0)
	const n = 120
	ctx := context.Background()
	var ids []string
	for range n {
		id := pixID()
		ids = append(ids, id)
		_, err := s.store.Receive(ctx, pix.Notification{EndToEndID: id, AccountID: "acc-1", AmountCents: 1, Payload: []byte(`{}`)})
		require.NoError(t, err)
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{}, 2)
	for range 2 {
		src := workflows.CreditSource(s.store.InboxQueue(), s.cfg.TaskQueues().Credits, s.cfg.Retry(), workflows.CreditInputListingVersion(s.cfg.CreditListingInInput))
		d := durable.New(s.store, src, s.client(), durable.Options{
			PollInterval: 50 * time.Millisecond,
			BatchSize:    7, Concurrency: 4, RecheckAfter: time.Hour, RetryMaxDelay: time.Second,
		}, slog.New(slog.NewJSONHandler(io.Discard, nil)))
		go func() { _ = d.Run(runCtx); done <- struct{}{} }()
	}
	for _, id := range ids {
		s.waitStatus(id, pix.StatusDone, 60*time.Second)
	}
	cancel()
	<-done
	<-done

	require.EqualValues(t, n, s.balance("acc-1"))
	query := fmt.Sprintf("TaskQueue = %q", s.cfg.TaskQueues().Credits) + s.startedSince()
	require.Eventually(t, func() bool {
		res, err := s.client().CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
		return err == nil && res.Count == n
	}, 20*time.Second, 200*time.Millisecond, "one run per PIX, no more")
	s.assertBooksBalance()
}
