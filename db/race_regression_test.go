package db_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/pix"
	refundsaga "github.com/pixbank/pix/saga/refund"
)

// A redelivery that waits on a row a concurrent MarkFailed is failing
// re-drives it from the row's latest version: its receipt says so, and it
// wakes the dispatchers (found by an attack review: the snapshot's status
// said "not re-driven", and no wake was asked).
func TestRedeliveryRacingAFailureReportsTheRedrive(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	id := dbtest.E2EID(1)
	_, err := s.Receive(ctx, dbtest.Notice(id, "acc-1", 100))
	require.NoError(t, err)
	db.PendingWakes(s)

	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE inbox_messages SET status = 'failed', dispatch_due_at = NULL, processed_at = now() WHERE end_to_end_id = $1`, id)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var receipt struct {
		redriven bool
		err      error
	}
	wg.Go(func() {
		r, err := s.Receive(ctx, dbtest.Notice(id, "acc-1", 100))
		receipt.redriven, receipt.err = r.Redriven, err
	})
	waitBlocked(t, s.Pool(), 1) // the redelivery's snapshot is taken; it waits on the row
	require.NoError(t, tx.Commit(ctx))
	wg.Wait()
	require.NoError(t, receipt.err)

	var status string
	var drive int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT status, drive FROM inbox_messages WHERE end_to_end_id = $1`, id).Scan(&status, &drive))
	require.Equal(t, pix.StatusPending, status)
	require.Equal(t, 2, drive)
	require.True(t, receipt.redriven)
	require.Equal(t, []string{db.DueChannel}, db.PendingWakes(s))
}

// A PSP notice that commits between a refund's start and the dispatcher's
// record of it is signalled once, not at every poll interval for the
// run's life (found by an attack review: the whole record was fenced off,
// dispatched_at stayed empty, and each round signalled again).
func TestNoticeDuringTheStartIsSignalledOnce(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	e2e := dbtest.CreditNth(t, s, 1, "acc-1", 10_000)
	r, err := refund(t, s, e2e, 4_000, anyone)
	require.NoError(t, err)

	var mu sync.Mutex
	runOpen, signals := false, 0
	refunds := refundsaga.Source(s.RefundQueue(), "unused", refundsaga.DefaultRunSettings())
	src := durable.Source{
		Kind:     refunds.Kind,
		Queue:    refunds.Queue,
		Redrives: refunds.Redrives,
		LogAttrs: refunds.LogAttrs,
		Start: func(_ context.Context, _ client.Client, due durable.Due) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			if !runOpen {
				runOpen = true
				// The run asks the PSP, which answers and notifies at once:
				// the webhook commits before the dispatcher's record.
				_, err := s.NoteRefundOutcomes(ctx, []db.RefundNotice{{ID: r.ID, EndToEndID: e2e, Status: "DEVOLVIDO"}})
				return true, err
			}
			if _, ok := due.Memo["psp_notice"]; ok {
				signals++ // refund.Start signals the open run
			}
			return false, nil
		},
	}
	poll := 20 * time.Millisecond
	d := durable.New(nil, src, nil, durable.Options{PollInterval: poll, BatchSize: 10, Concurrency: 1, RecheckAfter: time.Minute, RetryMaxDelay: time.Second},
		slog.New(slog.NewJSONHandler(io.Discard, nil)))
	for range 20 {
		_, err := d.DispatchOnce(ctx)
		require.NoError(t, err)
		time.Sleep(poll + 10*time.Millisecond)
	}
	var dispatched bool
	var notices, signalled int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT dispatched_at IS NOT NULL, notices, signalled_notices FROM pix_refunds WHERE id = $1`, r.ID).
		Scan(&dispatched, &notices, &signalled))
	require.Equal(t, 1, signals, "the notice is signalled once")
	require.True(t, dispatched)
	require.Equal(t, 1, notices)
	require.Equal(t, 1, signalled)
}
