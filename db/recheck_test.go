package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/durable/rows"
)

// A started row's rechecks wait as long as the row has been open since its
// first start (2, 4, 8, ... minutes), between Recheck.After and .Max: a row
// queued behind a backlog is not started again every After. Every saga's
// queue records the same way.
func TestRechecksWaitAsLongAsTheRowHasBeenOpen(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	openAccount(t, s, "acc-1", 100_000)
	credited := creditPIX(t, s, 1, "acc-1", 10_000)
	_, err := refund(s, credited, 1_000, anyone)
	require.NoError(t, err)
	debit(t, s, "acc-1", 500)
	_, err = s.Receive(ctx, note(e2eID(2), "acc-1", 100))
	require.NoError(t, err)

	recheck := rows.Recheck{After: 2 * time.Minute, Max: 16 * time.Minute}
	for _, q := range []struct {
		name  string
		queue db.DueQueue
		table string
		key   string
	}{
		{"inbox", s.InboxQueue(), "inbox_messages", "end_to_end_id"},
		{"transfers", s.TransferQueue(), "pix_transfers", "id::text"},
		{"refunds", s.RefundQueue(), "pix_refunds", "id"},
	} {
		claimed, err := q.queue.Claim(ctx, 10, 0)
		require.NoError(t, err)
		require.Len(t, claimed, 1, q.name)
		// waitAfter records the start of a row first started open ago, and
		// returns how long it now waits before its recheck.
		waitAfter := func(open time.Duration) time.Duration {
			if open > 0 {
				_, err := s.Pool().Exec(ctx, `UPDATE `+q.table+` SET dispatched_at = now() - $1::interval WHERE `+q.key+` = $2`, open, claimed[0].Key)
				require.NoError(t, err)
			}
			require.NoError(t, q.queue.MarkDispatched(ctx, claimed, recheck))
			var wait time.Duration
			require.NoError(t, s.Pool().QueryRow(ctx, `SELECT dispatch_due_at - now() FROM `+q.table+` WHERE `+q.key+` = $1`, claimed[0].Key).Scan(&wait))
			return wait
		}
		// Within a second: now() is each statement's transaction's.
		within := func(want, got time.Duration, what string) {
			require.InDelta(t, want.Seconds(), got.Seconds(), 1, "%s: %s", q.name, what)
		}
		within(2*time.Minute, waitAfter(0), "the first recheck waits After")
		within(2*time.Minute, waitAfter(time.Minute), "never less than After")
		within(5*time.Minute, waitAfter(5*time.Minute), "as long as it has been open")
		within(16*time.Minute, waitAfter(3*time.Hour), "never more than Max")
		require.NoError(t, q.queue.MarkDispatched(ctx, claimed, rows.Recheck{After: 2 * time.Minute}))
		var wait time.Duration
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT dispatch_due_at - now() FROM `+q.table+` WHERE `+q.key+` = $1`, claimed[0].Key).Scan(&wait))
		within(2*time.Minute, wait, "a Max below After waits After")
	}
}
