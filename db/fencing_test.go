package db_test

// Regression tests of the failure paths an audit found: each one fails on
// the code before the fix (a stale actor's write landing after a newer
// actor's, a lock order that deadlocks, a charge concluded for the wrong
// payment).

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/durable/rows"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/reconcile"
)

// waitBlocked waits until a session of the pool is waiting for a lock
// (pg_stat_activity), so that a test can order two transactions without
// sleeping on a guess.
func waitBlocked(t *testing.T, pool *pgxpool.Pool, sessions int) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `
			SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n))
		if n >= sessions {
			return
		}
		require.True(t, time.Now().Before(deadline), "no session blocked on a lock within 10 s")
		time.Sleep(5 * time.Millisecond)
	}
}

// outcome is what a call run in the background (inBackground) returned.
type outcome[T any] struct {
	val T
	err error
}

// inBackground runs call in a goroutine and returns where its outcome
// comes: a test then makes it wait for a lock (waitBlocked) before it lets
// it go.
func inBackground[T any](call func() (T, error)) <-chan outcome[T] {
	done := make(chan outcome[T], 1)
	go func() {
		v, err := call()
		done <- outcome[T]{v, err}
	}()
	return done
}

// atOnce runs call(0) to call(n-1), each in a goroutine of its own, and
// returns wait, which waits for them all and returns their errors in that
// order.
func atOnce(n int, call func(i int) error) (wait func() []error) {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = call(i) })
	}
	return func() []error {
		wg.Wait()
		return errs
	}
}

// winners is how many of errs are nil; every other must be refusal.
func winners(t *testing.T, errs []error, refusal error) int {
	t.Helper()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, refusal):
		default:
			t.Fatalf("call %d: %v", i, err)
		}
	}
	return won
}

func failedEvents(t *testing.T, s *db.Store, id string) int {
	t.Helper()
	var n int
	require.NoError(t, s.Pool().QueryRow(context.Background(), `
		SELECT count(*) FROM outbox_events WHERE aggregate_id = $1 AND event_type = $2`, id, db.EventCreditFailed).Scan(&n))
	return n
}

// Defect 4: MarkCreditFailed commits, its answer is lost, a redelivery
// re-drives the row, then the activity's retry arrives. The retry belongs
// to the old drive: it must change nothing (the row stays pending for the
// new drive's run) and write no second failed event.
func TestRetriedMarkFailedDoesNotUndoARedrive(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	n := dbtest.Notice(dbtest.E2EID(1), "acc-missing", 300)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)
	claimed, err := s.InboxQueue().Claim(ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	drive := claimed[0].Drive

	marked, err := s.MarkFailed(ctx, n.EndToEndID, drive, 5, "AccountNotFound: acc-missing")
	require.NoError(t, err)
	require.Equal(t, db.MarkFailedOutcome{Status: pix.StatusFailed, Attempts: 5, Marked: true}, marked)

	r, err := s.Receive(ctx, n) // the PSP redelivers: a re-drive
	require.NoError(t, err)
	require.True(t, r.Redriven)

	marked, err = s.MarkFailed(ctx, n.EndToEndID, drive, 5, "AccountNotFound: acc-missing") // the lost answer's retry
	require.NoError(t, err)
	require.Equal(t, pix.StatusSuperseded, marked.Status, "the retry of an older drive is told it was superseded")
	require.False(t, marked.Marked)

	c, err := s.GetCredit(ctx, n.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, pix.StatusPending, c.Status, "the re-drive stands")
	require.Equal(t, 1, failedEvents(t, s, n.EndToEndID), "one failed event for the one failure")

	// The same retry before any re-drive is told its own outcome again.
	n2 := dbtest.Notice(dbtest.E2EID(2), "acc-missing", 300)
	_, err = s.Receive(ctx, n2)
	require.NoError(t, err)
	for i := range 2 {
		marked, err = s.MarkFailed(ctx, n2.EndToEndID, 1, 5, "AccountNotFound: acc-missing")
		require.NoError(t, err)
		require.Equal(t, pix.StatusFailed, marked.Status)
		require.Equal(t, i == 0, marked.Marked, "only the first call fails the row")
	}
	require.Equal(t, 1, failedEvents(t, s, n2.EndToEndID))
}

// A run started before drives were numbered (drive 0) is fenced as drive 1,
// the drive every row had then: its retry after a re-drive is superseded.
func TestLegacyRunIsFencedAsTheFirstDrive(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	n := dbtest.Notice(dbtest.E2EID(9), "acc-missing", 300)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)
	marked, err := s.MarkFailed(ctx, n.EndToEndID, 0, 5, "AccountNotFound")
	require.NoError(t, err)
	require.True(t, marked.Marked)
	_, err = s.Receive(ctx, n)
	require.NoError(t, err)
	marked, err = s.MarkFailed(ctx, n.EndToEndID, 0, 5, "AccountNotFound")
	require.NoError(t, err)
	require.Equal(t, pix.StatusSuperseded, marked.Status)
	require.NoError(t, s.RecordAttemptFailure(ctx, n.EndToEndID, 0, 9, "late"))
	c, err := s.GetCredit(ctx, n.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, pix.StatusPending, c.Status)
	require.Equal(t, 5, c.Attempts, "the legacy run's late attempt is not recorded on the new drive")
	require.Equal(t, 1, failedEvents(t, s, n.EndToEndID))
}

// Defect 5: a credit commits while MarkFailed waits for the row's lock.
// MarkFailed must report the row done (the run then succeeds), not the
// pending it read in its statement's snapshot.
func TestMarkFailedSeesACreditThatCommittedWhileItWaited(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	n := dbtest.Notice(dbtest.E2EID(3), "acc-1", 300)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)

	// A credit transaction that holds the row, as Credit does.
	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	_, err = tx.Exec(ctx, `SELECT 1 FROM inbox_messages WHERE end_to_end_id = $1 FOR UPDATE`, n.EndToEndID)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE accounts SET balance_cents = balance_cents + 300 WHERE id = 'acc-1'`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO pix_credits (end_to_end_id, account_id, amount_cents, balance_after_cents) VALUES ($1, 'acc-1', 300, 300)`, n.EndToEndID)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE inbox_messages SET status = 'done', dispatch_due_at = NULL, processed_at = now() WHERE end_to_end_id = $1`, n.EndToEndID)
	require.NoError(t, err)

	done := inBackground(func() (db.MarkFailedOutcome, error) {
		return s.MarkFailed(ctx, n.EndToEndID, 1, 5, "Timeout: attempt exceeded its StartToClose timeout")
	})
	waitBlocked(t, s.Pool(), 1)
	require.NoError(t, tx.Commit(ctx))
	got := <-done
	require.NoError(t, got.err)
	require.Equal(t, pix.StatusDone, got.val.Status)
	require.Zero(t, failedEvents(t, s, n.EndToEndID))
}

// Defect 6: the retention deletes a done row while a redelivery of it
// runs. The redelivery must not bring the PIX back as pending.
func TestRetentionRacingARedeliveryDoesNotResurrectThePix(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	n := dbtest.Notice(dbtest.E2EID(4), "acc-1", 300)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)
	_, err = s.Credit(ctx, n.EndToEndID, 1, 1)
	require.NoError(t, err)

	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	_, err = tx.Exec(ctx, `DELETE FROM inbox_messages WHERE end_to_end_id = $1`, n.EndToEndID)
	require.NoError(t, err)

	done := inBackground(func() (pix.Receipt, error) { return s.Receive(ctx, n) })
	waitBlocked(t, s.Pool(), 1)
	require.NoError(t, tx.Commit(ctx))
	got := <-done
	require.NoError(t, got.err)
	require.True(t, got.val.Duplicate)
	require.Equal(t, pix.StatusDone, got.val.Status)

	var pending int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM inbox_messages WHERE status = 'pending'`).Scan(&pending))
	require.Zero(t, pending, "no pending row for a credited PIX")
	rec, err := reconcile.NewStore(s).Reconcile(ctx)
	require.NoError(t, err)
	require.True(t, rec.Balanced(), "%+v", rec)
}

// Defect 7: a dispatcher claims a row, is slow, and records its start
// after the row's run failed and the row was re-driven. The record belongs
// to the old drive: the re-drive stays due at once and undispatched.
func TestLateDispatcherDoesNotDelayARedrive(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	n := dbtest.Notice(dbtest.E2EID(5), "acc-missing", 300)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)
	claimed, err := s.InboxQueue().Claim(ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)

	_, err = s.MarkFailed(ctx, n.EndToEndID, claimed[0].Drive, 5, "AccountNotFound")
	require.NoError(t, err)
	_, err = s.Redrive(ctx, n.EndToEndID)
	require.NoError(t, err)

	require.NoError(t, s.InboxQueue().MarkDispatched(ctx, claimed, nil, rows.Recheck{After: time.Hour}))
	require.NoError(t, s.InboxQueue().DeferDispatch(ctx, claimed, time.Hour))

	var dueNow, dispatched bool
	require.NoError(t, s.Pool().QueryRow(ctx, `
		SELECT dispatch_due_at <= now(), dispatched_at IS NOT NULL FROM inbox_messages WHERE end_to_end_id = $1`,
		n.EndToEndID).Scan(&dueNow, &dispatched))
	require.True(t, dueNow, "the re-drive is due at once")
	require.False(t, dispatched, "no run of the re-drive was started")
	again, err := s.InboxQueue().Claim(ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, again, 1)
	require.Greater(t, again[0].Drive, claimed[0].Drive)
}

// Defect 3: two API Pix batches with the same ids in opposite orders.
// Each row is locked in one order (by end_to_end_id), so neither waits for
// the other in a cycle: both commit.
func TestOverlappingBatchesDoNotDeadlock(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	x := apiPixNote(dbtest.E2EID(10), "maria@example.com", "", 100)
	y := apiPixNote(dbtest.E2EID(11), "maria@example.com", "", 200)
	_, err := s.ReceiveBatch(ctx, []pix.Notification{x, y})
	require.NoError(t, err)

	// Hold both rows so that the two batches start waiting together.
	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	_, err = tx.Exec(ctx, `SELECT 1 FROM inbox_messages WHERE end_to_end_id = ANY($1) FOR UPDATE`, []string{x.EndToEndID, y.EndToEndID})
	require.NoError(t, err)

	batches := [][]pix.Notification{{x, y}, {y, x}}
	wait := atOnce(len(batches), func(i int) error {
		_, err := s.ReceiveBatch(ctx, batches[i])
		return err
	})
	waitBlocked(t, s.Pool(), 2)
	require.NoError(t, tx.Commit(ctx))
	errs := wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	c, err := s.GetCredit(ctx, x.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, 3, c.Deliveries)
}

// A deadlock or a serialization failure that survives the internal retries
// is "retry later" (503), never an internal error.
func TestDeadlockIsUnavailableNotInternal(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-a", 0)
	dbtest.OpenAccount(t, s, "acc-b", 0)
	// Two transactions that lock the two accounts in opposite orders
	// through the store's own transaction helper.
	var barrier sync.WaitGroup
	barrier.Add(2)
	orders := [][2]string{{"acc-a", "acc-b"}, {"acc-b", "acc-a"}}
	errs := atOnce(len(orders), func(i int) error {
		return db.InTxForTest(ctx, s, 1, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, orders[i][0]); err != nil {
				return err
			}
			barrier.Done()
			barrier.Wait()
			_, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, orders[i][1])
			return err
		})
	})()
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			require.ErrorIs(t, err, pix.ErrUnavailable, "a deadlock is retryable: %v", err)
		}
	}
	require.Equal(t, 1, failed, "PostgreSQL breaks the cycle by failing one side")
	require.False(t, errors.Is(errs[0], pix.ErrUnavailable) && errors.Is(errs[1], pix.ErrUnavailable))
}
