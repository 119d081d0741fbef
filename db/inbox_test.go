package db_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/durable/rows"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/retention"
)

// creditThenCleanUp receives and credits n (dbtest.CreditPIX), then
// deletes its inbox row as the retention job would: only the pix_credits
// row remains.
func creditThenCleanUp(t *testing.T, s *db.Store, n pix.Notification) {
	t.Helper()
	dbtest.CreditPIX(t, s, dbtest.PIX{EndToEndID: n.EndToEndID, AccountID: n.AccountID, AmountCents: n.AmountCents})
	_, err := s.Pool().Exec(context.Background(), `DELETE FROM inbox_messages WHERE end_to_end_id = $1`, n.EndToEndID)
	require.NoError(t, err)
}

func TestReceiveFirstDeliveryThenDuplicates(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	n := dbtest.Notice(dbtest.E2EID(1), "acc-1", 15000)

	r, err := s.Receive(ctx, n)
	require.NoError(t, err)
	require.Equal(t, pix.Receipt{EndToEndID: n.EndToEndID, Status: pix.StatusPending}, r)

	for range 2 {
		r, err = s.Receive(ctx, n)
		require.NoError(t, err)
		require.True(t, r.Duplicate)
		require.Equal(t, pix.StatusPending, r.Status)
		require.False(t, r.Redriven)
	}
	c, err := s.GetCredit(ctx, n.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, 3, c.Deliveries)
	require.Equal(t, pix.StatusPending, c.Status)
}

func TestReceiveMismatchChangesNothing(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	n := dbtest.Notice(dbtest.E2EID(1), "acc-1", 15000)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)

	_, err = s.Receive(ctx, dbtest.Notice(n.EndToEndID, "acc-1", 15001))
	require.ErrorIs(t, err, pix.ErrPayloadMismatch)
	_, err = s.Receive(ctx, dbtest.Notice(n.EndToEndID, "acc-2", 15000))
	require.ErrorIs(t, err, pix.ErrPayloadMismatch)

	c, err := s.GetCredit(ctx, n.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, 1, c.Deliveries)
	require.Equal(t, "acc-1", *c.AccountID)
	require.EqualValues(t, 15000, c.AmountCents)
}

func TestReceiveConcurrentCopiesMakeOneRow(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	n := dbtest.Notice(dbtest.E2EID(7), "acc-1", 100)
	const copies = 50
	var wg sync.WaitGroup
	start := make(chan struct{})
	receipts := make(chan pix.Receipt, copies)
	errs := make(chan error, copies)
	for range copies {
		wg.Go(func() {
			<-start
			r, err := s.Receive(ctx, n)
			errs <- err
			receipts <- r
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	close(receipts)
	for err := range errs {
		require.NoError(t, err)
	}
	firsts := 0
	for r := range receipts {
		if !r.Duplicate {
			firsts++
		}
	}
	require.Equal(t, 1, firsts, "exactly one delivery is the first")
	c, err := s.GetCredit(ctx, n.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, copies, c.Deliveries)
}

func TestCreditIsOnceAndIdempotent(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 1000)
	n := dbtest.Notice(dbtest.E2EID(2), "acc-1", 250)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)

	out, err := s.Credit(ctx, n.EndToEndID, 1, 1)
	require.NoError(t, err)
	require.Equal(t, db.CreditOutcome{AccountID: "acc-1", AmountCents: 250, Credited: true, BalanceAfter: 1250}, out)

	// The activity runs again after its commit (its report was lost).
	out, err = s.Credit(ctx, n.EndToEndID, 1, 2)
	require.NoError(t, err)
	require.False(t, out.Credited)
	require.EqualValues(t, 1250, out.BalanceAfter)
	require.EqualValues(t, 1250, dbtest.Balance(t, s, "acc-1"))

	c, err := s.GetCredit(ctx, n.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, pix.StatusDone, c.Status)
	require.Equal(t, 1, c.Attempts)
	require.NotNil(t, c.CreditedAt)

	// A redelivery of a done PIX only counts.
	r, err := s.Receive(ctx, n)
	require.NoError(t, err)
	require.Equal(t, pix.Receipt{EndToEndID: n.EndToEndID, Status: pix.StatusDone, Duplicate: true, Attempts: 1}, r)
	require.EqualValues(t, 1250, dbtest.Balance(t, s, "acc-1"))
}

func TestCreditUnknownAccountChangesNothingButTheAttempt(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	n := dbtest.Notice(dbtest.E2EID(3), "acc-missing", 250)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)

	_, err = s.Credit(ctx, n.EndToEndID, 1, 1)
	require.ErrorIs(t, err, pix.ErrAccountNotFound)
	require.NoError(t, s.RecordAttemptFailure(ctx, n.EndToEndID, 0, 1, "AccountNotFound: acc-missing"))

	c, err := s.GetCredit(ctx, n.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, pix.StatusPending, c.Status)
	require.Equal(t, 1, c.Attempts)
	require.Equal(t, "AccountNotFound: acc-missing", *c.LastError)
	require.Nil(t, c.CreditedAt)
}

func TestCreditClosedAccountIsRefused(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-closed", 10)
	require.NoError(t, s.CloseAccount(ctx, "acc-closed"))
	n := dbtest.Notice(dbtest.E2EID(4), "acc-closed", 250)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)
	_, err = s.Credit(ctx, n.EndToEndID, 1, 1)
	require.ErrorIs(t, err, pix.ErrAccountClosed)
	require.EqualValues(t, 10, dbtest.Balance(t, s, "acc-closed"))
}

func TestMarkFailedThenRedrive(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	n := dbtest.Notice(dbtest.E2EID(5), "acc-late", 300)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)
	_, err = s.Redrive(ctx, n.EndToEndID)
	require.ErrorIs(t, err, pix.ErrNotFailed, "a pending PIX can't be re-driven")

	marked, err := s.MarkFailed(ctx, n.EndToEndID, 1, 5, "AccountNotFound: acc-late")
	require.NoError(t, err)
	require.Equal(t, pix.StatusFailed, marked.Status)
	_, err = s.Credit(ctx, n.EndToEndID, 1, 6)
	require.ErrorIs(t, err, pix.ErrNotPending, "a failed row is credited only after a re-drive")

	dbtest.OpenAccount(t, s, "acc-late", 0)
	attempts, err := s.Redrive(ctx, n.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, 5, attempts)
	c, err := s.GetCredit(ctx, n.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, pix.StatusPending, c.Status)
	require.Equal(t, 5, c.Attempts, "a re-drive keeps the attempts")
	require.Equal(t, "AccountNotFound: acc-late", *c.LastError, "a re-drive keeps the last error")

	out, err := s.Credit(ctx, n.EndToEndID, 2, 6) // the re-drive is drive 2
	require.NoError(t, err)
	require.True(t, out.Credited)

	marked, err = s.MarkFailed(ctx, n.EndToEndID, 1, 7, "late failure")
	require.NoError(t, err)
	require.Equal(t, pix.StatusDone, marked.Status, "done is never overwritten by failed")
	require.EqualValues(t, 300, dbtest.Balance(t, s, "acc-late"))
}

// Redrive and RedriveFailed are one statement: Redrive names one PIX and
// says why it can't re-drive it; RedriveFailed takes the failed PIX of an
// account, and only those.
func TestRedriveOneOrAnAccountsFailedPIX(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-r1", 0)
	fail := func(n pix.Notification, attempts int) {
		t.Helper()
		_, err := s.Receive(ctx, n)
		require.NoError(t, err)
		_, err = s.MarkFailed(ctx, n.EndToEndID, 1, attempts, "broken")
		require.NoError(t, err)
	}
	a2, a1, other := dbtest.Notice(dbtest.E2EID(32), "acc-r1", 100), dbtest.Notice(dbtest.E2EID(31), "acc-r1", 100), dbtest.Notice(dbtest.E2EID(33), "acc-r2", 100)
	fail(a2, 2)
	fail(a1, 1)
	fail(other, 3)
	pending := dbtest.Notice(dbtest.E2EID(34), "acc-r1", 100)
	_, err := s.Receive(ctx, pending)
	require.NoError(t, err)
	done := dbtest.Notice(dbtest.E2EID(35), "acc-r1", 100)
	_, err = s.Receive(ctx, done)
	require.NoError(t, err)
	_, err = s.Credit(ctx, done.EndToEndID, 1, 1)
	require.NoError(t, err)

	_, err = s.Redrive(ctx, dbtest.E2EID(36))
	require.ErrorIs(t, err, pix.ErrCreditNotFound)
	_, err = s.Redrive(ctx, pending.EndToEndID)
	require.ErrorIs(t, err, pix.ErrNotFailed)
	require.ErrorContains(t, err, "it is pending")
	_, err = s.Redrive(ctx, done.EndToEndID)
	require.ErrorContains(t, err, "it is done")

	redriven, err := s.RedriveFailed(ctx, "acc-r1")
	require.NoError(t, err)
	require.Equal(t, []db.Redriven{{EndToEndID: a1.EndToEndID, Attempts: 1}, {EndToEndID: a2.EndToEndID, Attempts: 2}}, redriven,
		"the account's failed PIX only, in end_to_end_id order")
	redriven, err = s.RedriveFailed(ctx, "acc-r1")
	require.NoError(t, err)
	require.NotNil(t, redriven)
	require.Empty(t, redriven, "nothing is failed any more")
	_, err = s.Redrive(ctx, a1.EndToEndID)
	require.ErrorContains(t, err, "it is pending")
	c, err := s.GetCredit(ctx, other.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, pix.StatusFailed, c.Status, "another account's PIX stays failed")

	attempts, err := s.Redrive(ctx, other.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, 3, attempts)
	due, err := s.InboxQueue().Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	drives := map[string]int{}
	for _, d := range due {
		drives[d.Key] = d.Drive
	}
	require.Equal(t, map[string]int{a1.EndToEndID: 2, a2.EndToEndID: 2, other.EndToEndID: 2, pending.EndToEndID: 1}, drives)
}

func TestRedeliveryRedrivesFailedRow(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	n := dbtest.Notice(dbtest.E2EID(6), "acc-x", 300)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)
	_, err = s.MarkFailed(ctx, n.EndToEndID, 1, 5, "AccountNotFound")
	require.NoError(t, err)

	r, err := s.Receive(ctx, n)
	require.NoError(t, err)
	require.Equal(t, pix.Receipt{EndToEndID: n.EndToEndID, Status: pix.StatusPending, Duplicate: true, Redriven: true, Attempts: 5}, r)
	due, err := s.InboxQueue().Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []dbtest.ClaimState{{Key: n.EndToEndID, Attempts: 5}}, dbtest.ClaimStates(due))
	require.False(t, due[0].FirstStart(), "a re-drive's start is not the first: no dispatch lag")
}

func TestRedeliveryAfterInboxRowWasCleanedUpIsADuplicate(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	n := dbtest.Notice(dbtest.E2EID(8), "acc-1", 500)
	creditThenCleanUp(t, s, n)
	c, err := s.GetCredit(ctx, n.EndToEndID)
	require.NoError(t, err, "the credit is still reported after the inbox row is gone")
	require.Equal(t, pix.StatusDone, c.Status)

	r, err := s.Receive(ctx, n)
	require.NoError(t, err)
	require.Equal(t, pix.Receipt{EndToEndID: n.EndToEndID, Status: pix.StatusDone, Duplicate: true}, r)
	rs, err := s.ReceiveBatch(ctx, []pix.Notification{n})
	require.NoError(t, err)
	require.Equal(t, []pix.Receipt{r}, rs)
	var rows int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM inbox_messages`).Scan(&rows))
	require.Zero(t, rows, "no new row: nothing to credit again")
	require.EqualValues(t, 500, dbtest.Balance(t, s, "acc-1"))
}

func TestClaimDueLeasesRows(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	for i := range 3 {
		_, err := s.Receive(ctx, dbtest.Notice(dbtest.E2EID(100+i), "acc-1", 1))
		require.NoError(t, err)
	}
	first, err := s.InboxQueue().Claim(ctx, 2, time.Minute)
	require.NoError(t, err)
	require.Len(t, first, 2)
	second, err := s.InboxQueue().Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, second, 1, "claimed rows are not due again before the lease ends")
	none, err := s.InboxQueue().Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, none)

	// A claimer that died: its rows come due again when the lease ends.
	_, err = s.Receive(ctx, dbtest.Notice(dbtest.E2EID(200), "acc-1", 1))
	require.NoError(t, err)
	orphan, err := s.InboxQueue().Claim(ctx, 10, 10*time.Millisecond)
	require.NoError(t, err)
	require.Len(t, orphan, 1)
	time.Sleep(20 * time.Millisecond)
	retaken, err := s.InboxQueue().Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Equal(t, orphan, retaken)

	// A recorded start hides the row until the recheck.
	require.NoError(t, s.InboxQueue().MarkDispatched(ctx, retaken[:1], nil, rows.Recheck{After: time.Millisecond}))
	time.Sleep(5 * time.Millisecond)
	rechecked, err := s.InboxQueue().Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []dbtest.ClaimState{{Key: retaken[0].Key, Dispatched: true}}, dbtest.ClaimStates(rechecked))

	require.NoError(t, s.InboxQueue().DeferDispatch(ctx, first[:1], time.Millisecond))
	time.Sleep(5 * time.Millisecond)
	again, err := s.InboxQueue().Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []dbtest.ClaimState{{Key: first[0].Key}}, dbtest.ClaimStates(again))
}

func TestUnreachableDatabaseIsUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := db.Open(ctx, "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", 1)
	require.NoError(t, err)
	defer pool.Close()
	s := db.NewStore(pool)
	_, err = s.Receive(ctx, dbtest.Notice(dbtest.E2EID(9), "acc-1", 1))
	require.ErrorIs(t, err, pix.ErrUnavailable)
	require.ErrorIs(t, s.Ping(ctx), pix.ErrUnavailable)
}

func TestMigrateIsRepeatable(t *testing.T) {
	s := dbtest.New(t)
	applied, err := db.Migrate(context.Background(), s.Pool())
	require.NoError(t, err)
	require.Empty(t, applied)
}

func TestNotifyDueWakesListeners(t *testing.T) {
	s := dbtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	woken := make(chan struct{}, 10)
	done := make(chan error, 1)
	go func() { done <- s.Listen(ctx, db.DueChannel, func() { woken <- struct{}{} }) }()

	// Notify until the listener, which needs a moment to LISTEN, hears one.
	require.Eventually(t, func() bool {
		require.NoError(t, s.NotifyDue(ctx))
		select {
		case <-woken:
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	}, 10*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done, "the listener stops cleanly with its context")
}

// A credit recorded in an earlier life of an end_to_end_id (the inbox row was
// cleaned up since) guards it: the same PIX is not credited again, and a
// different account or amount under that id is refused.
func TestEarlierCreditWithAnotherAmountIsRefused(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	n := dbtest.Notice(dbtest.E2EID(9), "acc-1", 500)
	creditThenCleanUp(t, s, n)

	// At the door: another amount, or another account, after the cleanup.
	_, err := s.Receive(ctx, dbtest.Notice(n.EndToEndID, "acc-1", 501))
	require.ErrorIs(t, err, pix.ErrPayloadMismatch)
	_, err = s.Receive(ctx, dbtest.Notice(n.EndToEndID, "acc-2", 500))
	require.ErrorIs(t, err, pix.ErrPayloadMismatch)

	// And in the credit itself, for a row that got in some other way.
	_, err = s.Pool().Exec(ctx, `
		INSERT INTO inbox_messages (end_to_end_id, account_id, amount_cents, payload, dispatch_due_at)
		VALUES ($1, 'acc-1', 501, '{}', now())`, n.EndToEndID)
	require.NoError(t, err)
	_, err = s.Credit(ctx, n.EndToEndID, 1, 1)
	require.ErrorIs(t, err, pix.ErrPayloadMismatch)
	require.EqualValues(t, 500, dbtest.Balance(t, s, "acc-1"))
	c, err := s.GetCredit(ctx, n.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, pix.StatusPending, c.Status, "the refused credit changed nothing")
}

func TestCreditTimesAreTheCreditsOwn(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	n := dbtest.Notice(dbtest.E2EID(10), "acc-1", 1)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)
	_, err = s.Credit(ctx, n.EndToEndID, 1, 1)
	require.NoError(t, err)
	var credited, processed, updated time.Time
	require.NoError(t, s.Pool().QueryRow(ctx, `
		SELECT c.credited_at, m.processed_at, a.updated_at
		FROM pix_credits c JOIN inbox_messages m USING (end_to_end_id) JOIN accounts a ON a.id = c.account_id
		WHERE c.end_to_end_id = $1`, n.EndToEndID).Scan(&credited, &processed, &updated))
	require.Equal(t, credited, processed)
	require.Equal(t, credited, updated)
}

func TestRetentionDeletesOldDoneRowsOnly(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	for i := range 3 {
		n := dbtest.Notice(dbtest.E2EID(100+i), "acc-1", 100)
		_, err := s.Receive(ctx, n)
		require.NoError(t, err)
		_, err = s.Credit(ctx, n.EndToEndID, 1, 1)
		require.NoError(t, err)
	}
	recent := dbtest.Notice(dbtest.E2EID(200), "acc-1", 100)
	_, err := s.Receive(ctx, recent)
	require.NoError(t, err)
	_, err = s.Credit(ctx, recent.EndToEndID, 1, 1)
	require.NoError(t, err)
	failed := dbtest.Notice(dbtest.E2EID(300), "acc-none", 100)
	_, err = s.Receive(ctx, failed)
	require.NoError(t, err)
	_, err = s.MarkFailed(ctx, failed.EndToEndID, 1, 5, "AccountNotFound")
	require.NoError(t, err)
	pending := dbtest.Notice(dbtest.E2EID(400), "acc-1", 100)
	_, err = s.Receive(ctx, pending)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `UPDATE inbox_messages SET processed_at = now() - interval '31 days', received_at = now() - interval '31 days'
		WHERE end_to_end_id <> $1`, recent.EndToEndID)
	require.NoError(t, err)

	n, err := retention.NewStore(s).DeleteDoneInboxRows(ctx, 30*24*time.Hour, 2)
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "in batches")
	n, err = retention.NewStore(s).DeleteDoneInboxRows(ctx, 30*24*time.Hour, 2)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	var left []string
	rows, err := s.Pool().Query(ctx, `SELECT status FROM inbox_messages ORDER BY end_to_end_id`)
	require.NoError(t, err)
	left, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{pix.StatusDone, pix.StatusFailed, pix.StatusPending}, left, "the recent done row, the failed and the pending ones stay")

	// A PSP redelivery of a cleaned-up PIX: a duplicate, no second credit.
	r, err := s.Receive(ctx, dbtest.Notice(dbtest.E2EID(100), "acc-1", 100))
	require.NoError(t, err)
	require.True(t, r.Duplicate)
	require.Equal(t, pix.StatusDone, r.Status)
	require.EqualValues(t, 400, dbtest.Balance(t, s, "acc-1"))
}

// A claimed inbox row carries what its run is listed under in the Temporal
// UI: the PIX, its account, amount, status, PSP and payer.
func TestClaimCarriesTheListing(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	n := dbtest.Notice(dbtest.E2EID(777), "acc-9", 4_200)
	n.PSP = "psp-a"
	n.Payload = json.RawMessage(`{"payer":{"name":"Joana Dias","ispb":"12345678"}}`)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)

	due, err := s.InboxQueue().Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, due, 1)
	d := due[0]
	require.True(t, d.FirstStart())
	require.Equal(t, n.EndToEndID, d.EndToEndID)
	require.Equal(t, "acc-9", *d.AccountID)
	require.EqualValues(t, 4_200, d.AmountCents)
	require.Equal(t, pix.StatusPending, d.Status)
	require.Equal(t, "psp-a", *d.PSP)
	require.Equal(t, map[string]any{"payer": map[string]any{"name": "Joana Dias", "ispb": "12345678"}}, d.Memo)
	require.WithinDuration(t, time.Now(), d.Since, time.Minute)
}
