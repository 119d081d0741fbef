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

// A recheck that found a row's run open waits as long as the run has been
// open (2, 4, 8, ... minutes), between Recheck.After and .Max, so a run
// queued behind a backlog is not started again every After; a start that
// began a run waits After, however long the row has been open. Every
// declared queue records the same way: a queue declared is checked here
// once the setup gives it a due row.
func TestRechecksWaitAsLongAsTheRunHasBeenOpen(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 100_000)
	credited := dbtest.CreditNth(t, s, 1, "acc-1", 10_000)
	_, err := refund(t, s, credited, 1_000, anyone)
	require.NoError(t, err)
	debit(t, s, "acc-1", 500)
	_, err = s.Receive(ctx, dbtest.Notice(dbtest.E2EID(2), "acc-1", 100))
	require.NoError(t, err)

	recheck := rows.Recheck{After: 2 * time.Minute, Max: 16 * time.Minute}
	queues := db.DeclaredQueues(s)
	require.NotEmpty(t, queues)
	for _, q := range queues {
		// The key as text, whatever its type (a transfer's is a uuid).
		key := q.Key + "::text"
		claimed, err := q.Queue.Claim(ctx, 10, 0)
		require.NoError(t, err)
		require.Len(t, claimed, 1, "queue %s: the setup above gives every declared queue one due row", q.Name)
		// The row's run began this long ago.
		runBegan := func(ago time.Duration) {
			_, err := s.Pool().Exec(ctx, `UPDATE `+q.Table+` SET dispatched_at = now() - $1::interval WHERE `+key+` = $2`, ago, claimed[0].Key)
			require.NoError(t, err)
		}
		// wait is how long the row now waits before its recheck, and how
		// long ago its run began by its record.
		wait := func() (wait, began time.Duration) {
			require.NoError(t, s.Pool().QueryRow(ctx, `SELECT dispatch_due_at - now(), now() - dispatched_at FROM `+q.Table+` WHERE `+key+` = $1`,
				claimed[0].Key).Scan(&wait, &began))
			return wait, began
		}
		// Within a second: now() is each statement's transaction's.
		within := func(want, got time.Duration, what string) {
			t.Helper()
			require.InDelta(t, want.Seconds(), got.Seconds(), 1, "%s: %s", q.Name, what)
		}
		rechecked := func(r rows.Recheck) time.Duration {
			t.Helper()
			require.NoError(t, q.Queue.MarkDispatched(ctx, nil, claimed, r))
			w, _ := wait()
			return w
		}

		require.NoError(t, q.Queue.MarkDispatched(ctx, claimed, nil, recheck))
		w, began := wait()
		within(2*time.Minute, w, "a start that began a run waits After")
		within(0, began, "and records when the run began")
		within(2*time.Minute, rechecked(recheck), "a run open for less than After: After")
		runBegan(5 * time.Minute)
		within(5*time.Minute, rechecked(recheck), "a run open for 5 minutes: 5 more")
		runBegan(3 * time.Hour)
		within(16*time.Minute, rechecked(recheck), "never more than Max")
		within(2*time.Minute, rechecked(rows.Recheck{After: 2 * time.Minute}), "a Max below After waits After")

		// A new run after the old one ended (lost, given up) is young:
		// its first recheck waits After, whatever the row's age.
		require.NoError(t, q.Queue.MarkDispatched(ctx, claimed, nil, recheck))
		w, began = wait()
		within(2*time.Minute, w, "a new run waits After")
		within(0, began, "the new run's start is recorded")
	}
}

// A run that waits on purpose until a time (a scheduled PIX's date: the
// queue's NotBefore) could not have changed before it: its rechecks come no
// earlier, not a no-op start every Recheck.Max for 30 days. A row with no
// such time, or whose time has passed, is rechecked as any other.
func TestARunWaitingOnPurposeIsNotRecheckedBeforeItsTime(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	_, err := s.Pool().Exec(ctx, `CREATE TABLE waiting (
		id text PRIMARY KEY, end_to_end_id text NOT NULL DEFAULT '', account_id text, amount_cents bigint NOT NULL DEFAULT 1,
		status text NOT NULL DEFAULT 'scheduled', created_at timestamptz NOT NULL DEFAULT now(), traceparent text,
		dispatch_due_at timestamptz DEFAULT now(), dispatched_at timestamptz, run_at timestamptz)`)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `INSERT INTO waiting (id, run_at) VALUES
		('in-30-days', now() + interval '30 days'), ('undated', NULL), ('past', now() - interval '1 day')`)
	require.NoError(t, err)
	q, err := db.QueueForTest(s, db.QueueSpec{
		Name: "waiting", Table: "waiting", Key: "id", KeyType: "text", Channel: "waiting_due",
		Open: "m.dispatch_due_at IS NOT NULL", Attempts: "0", Drive: "1", NotBefore: "run_at",
		Listing: db.Listing{
			EndToEndID: "m.end_to_end_id", AccountID: "m.account_id", AmountCents: "m.amount_cents", Status: "m.status",
			PSP: "NULL::text", Memo: "'{}'::jsonb", Since: "m.created_at", Traceparent: "m.traceparent",
		},
	})
	require.NoError(t, err)

	claimed, err := q.Claim(ctx, 10, 0)
	require.NoError(t, err)
	require.Len(t, claimed, 3)
	waits := func() map[string]time.Duration {
		got := map[string]time.Duration{}
		r, err := s.Pool().Query(ctx, `SELECT id, dispatch_due_at - now() FROM waiting`)
		require.NoError(t, err)
		for r.Next() {
			var id string
			var wait time.Duration
			require.NoError(t, r.Scan(&id, &wait))
			got[id] = wait
		}
		require.NoError(t, r.Err())
		return got
	}
	check := func(what string) {
		t.Helper()
		w := waits()
		require.InDelta(t, (30 * 24 * time.Hour).Seconds(), w["in-30-days"].Seconds(), 1, "%s: waits until its time", what)
		require.InDelta(t, (2 * time.Minute).Seconds(), w["undated"].Seconds(), 1, "%s: no time, the usual recheck", what)
		require.InDelta(t, (2 * time.Minute).Seconds(), w["past"].Seconds(), 1, "%s: its time passed, the usual recheck", what)
	}
	recheck := rows.Recheck{After: 2 * time.Minute, Max: 16 * time.Minute}
	require.NoError(t, q.MarkDispatched(ctx, claimed, nil, recheck))
	check("a start that began the run")
	require.NoError(t, q.MarkDispatched(ctx, nil, claimed, recheck))
	check("a recheck that found the run open")

	// A start that failed is tried again soon, whatever the time: the run
	// must exist to wait.
	require.NoError(t, q.DeferDispatch(ctx, claimed, time.Minute))
	for id, wait := range waits() {
		require.InDelta(t, time.Minute.Seconds(), wait.Seconds(), 1, id)
	}
}
