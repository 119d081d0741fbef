package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// Issue 37, attack review r9 LOW-3: Settle read the report's hold through
// the pool (db.Store.GetHold) inside decide's transaction, which holds a
// connection and the report's lock: with every other connection taken (as
// many Settles at once as the pool has connections) it waited for itself.
// The hold is read through the transaction. Seen failing on the old
// Settle (context deadline exceeded); the deadline only ends a test that
// would hang.
func TestSettleNeedsOneConnection(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(10_000, 0)
	in := report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
	r := f.agreedAndClosed(f.step(f.store.Hold(ctx, f.intake(in))), in)
	r = f.returnedByPSP(request(r, 10_000, dict.RefundOpen), "D12345678202612061200abcdefghijk")

	pool := f.s.Pool()
	var held []*pgxpool.Conn
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()
	for i := int32(1); i < pool.Config().MaxConns; i++ {
		conn, err := pool.Acquire(ctx)
		require.NoError(t, err)
		held = append(held, conn)
	}
	tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	out, changed, err := f.store.Settle(tctx, r)
	require.NoError(t, err, "Settle waited for a second connection under the report's lock")
	require.True(t, changed)
	require.EqualValues(t, 10_000, out.ReturnedCents)
}

// Issue 37, attack review r9 LOW-2: Return decided a report's 90 days
// (ReturnUntil) after the report's lock, then waited for the PIX's credit,
// the account's and the hold's locks: 90 days that ended during that wait
// still handed money to a devolução. The deadline is checked again after
// the last lock, and its end changes nothing, as before the locks. Seen
// failing on the old Return (a devolução recorded after return_until).
func TestAReturnWhoseDaysEndWhileItWaitsForTheCreditChangesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	account, r := f.awaitingCredit()
	f.creditMore(account, 2_000) // fills the hold: a return would capture it
	_, err := f.s.Pool().Exec(ctx, `UPDATE pix_med_reports SET return_until = now() + interval '700 milliseconds' WHERE id = $1`, r.ID)
	require.NoError(t, err)
	r, err = f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.EqualValues(t, 2_000, r.HeldCents)

	got, changed, err := f.returnWhileLocked(r)
	require.NoError(t, err)
	require.False(t, changed, "returned at %s, after its 90 days", got.Status)
	require.Equal(t, med.StatusAwaitingCredit, got.Status)
	require.Nil(t, got.RefundID)
	f.requireMoney(account, 2_000, 2_000)
	f.requireBooks()
}

// Attack review r10 LOW-1: a return in parts whose 90 days end while it
// waits for the PIX's credit was refused by the PIX's devolução window
// (db.RecordRefund's pix.ErrRefundWindowClosed), which with real times
// closes first (received_at + 90 days, received_at <= credited_at, and
// return_until = credited_at + 90 days): return_refused recorded, the
// request to be closed REJECTED CANNOT_REFUND, PixMEDReturnRefused fired,
// where the deadline's own path changes nothing (the report ends at its
// return_until, NO_BALANCE when nothing was returned). The deadline is
// checked first. Seen failing on the old Return (return_refused
// refund_window_closed). The times are real ones: the PIX received half a
// second before its credit, both 2 s short of 90 days when the Return
// starts, and the database's clock passes both during its wait (a report
// taken before attack review r11 LOW-2: since, return_until is the
// window's close itself).
func TestAReturnWhoseDaysAndWindowEndWhileItWaitsIsNoRefusal(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.awaitingFirstPart()
	f.creditMore(c.AccountID, 2_000) // fills the hold: a return would capture it

	var credited time.Time
	require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT clock_timestamp() - $1::interval + interval '2 seconds'`,
		med.ReturnWindow).Scan(&credited))
	_, err := f.s.Pool().Exec(ctx, `UPDATE pix_credits SET received_at = $2::timestamptz - interval '500 milliseconds', credited_at = $2
		WHERE end_to_end_id = $1`, c.EndToEndID, credited)
	require.NoError(t, err)
	_, err = f.s.Pool().Exec(ctx, `UPDATE pix_med_reports SET credited_at = $2, return_until = $3 WHERE id = $1`,
		r.ID, credited, credited.Add(med.ReturnWindow))
	require.NoError(t, err)
	r, err = f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.EqualValues(t, 2_000, r.HeldCents)
	f.requireNoRefusalAfterTheDays(r, "refund_window_closed", nil)
	f.requireMoney(c.AccountID, 2_000, 2_000)
	f.requireBooks()
}

// Attack review r11 LOW-1: the other final refusal of a devolução, the
// account closed (pix.ErrAccountClosed, from the debit's lock of the
// account), met after 90 days that ended while the Return waited for the
// PIX's credit, was recorded as the return's refusal (return_refused
// account_closed, the request to be closed REJECTED ACCOUNT_CLOSURE, where
// the deadline closes it NO_BALANCE). Any declared refusal now answers
// only within return_until, checked first, as the PIX's window's does.
// Seen failing on the old Return (return_refused account_closed).
func TestAnAccountClosedAfterTheDaysEndedWhileAReturnWaitsIsNoRefusal(t *testing.T) {
	f := newFixture(t)
	c, r := f.awaitingFirstPart()
	f.creditMore(c.AccountID, 2_000) // fills the hold: a return would capture it
	r = f.endingSoon(r)
	require.EqualValues(t, 2_000, r.HeldCents)

	f.requireNoRefusalAfterTheDays(r, "account_closed", func() {
		require.NoError(t, f.s.CloseAccount(context.Background(), c.AccountID))
	})
}

// The same through the hold a Return makes for a report that holds
// nothing (holdMore: db.Hold refuses the closed account). Seen failing on
// the old Return (return_refused account_closed).
func TestAnAccountClosedAfterTheDaysEndedWhileAReturnHoldsIsNoRefusal(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.awaitingFirstPart()
	// A report without a hold (the Return holds anew: db.Hold locks the
	// PIX's credit, then the account).
	_, err := f.s.Pool().Exec(ctx, `UPDATE pix_med_reports SET hold_id = NULL, held_cents = 0 WHERE id = $1`, r.ID)
	require.NoError(t, err)
	r = f.endingSoon(r)
	require.Nil(t, r.HoldID)

	f.requireNoRefusalAfterTheDays(r, "account_closed", func() {
		require.NoError(t, f.s.CloseAccount(context.Background(), c.AccountID))
	})
}

// awaitingFirstPart is a report AGREED of a PIX of 10,000 whose account
// spent it all before the report: its request taken, nothing returned, it
// waits for credits (awaiting_credit), its hold filling and holding nothing.
func (f *fixture) awaitingFirstPart() (dbtest.Credited, med.Report) {
	ctx := context.Background()
	c, r := f.agreedAfterSpending(10_000)
	r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	r = f.step(f.store.Return(ctx, r))
	require.Equal(f.t, med.StatusAwaitingCredit, r.Status)
	require.Zero(f.t, r.Returns, "nothing to return yet")
	return c, r
}

// endingSoon is r with its return_until 700 ms from now, by the
// database's clock.
func (f *fixture) endingSoon(r med.Report) med.Report {
	ctx := context.Background()
	_, err := f.s.Pool().Exec(ctx, `UPDATE pix_med_reports SET return_until = now() + interval '700 milliseconds' WHERE id = $1`, r.ID)
	require.NoError(f.t, err)
	r, err = f.store.Get(ctx, r.ID)
	require.NoError(f.t, err)
	return r
}

// requireNoRefusalAfterTheDays runs r's Return while its PIX's credit is
// locked, runs then (nil: nothing) after return_until has passed, then lets
// the Return go on: nothing changes, no refusal recorded (refusal's series
// of PixMEDReturnRefused's counter unchanged), and the request is to be
// closed as the deadline closes it (REJECTED NO_BALANCE: nothing returned).
func (f *fixture) requireNoRefusalAfterTheDays(r med.Report, refusal string, then func()) {
	t := f.t
	refused := testutil.ToFloat64(med.ReturnsRefused.WithLabelValues(refusal))
	got, changed, err := f.returnWhileLockedThen(r, then)
	require.NoError(t, err)
	if got.ReturnRefused != nil {
		t.Fatalf("refused at or after its deadline: return_refused %s, its request to be closed %s %s", *got.ReturnRefused,
			med.Closing(got).Result, med.Closing(got).RejectionReason)
	}
	require.False(t, changed)
	require.Equal(t, med.StatusAwaitingCredit, got.Status)
	require.Equal(t, r.Gen, got.Gen)
	require.Nil(t, got.RefundID)
	require.Equal(t, refused, testutil.ToFloat64(med.ReturnsRefused.WithLabelValues(refusal)), "PixMEDReturnRefused's counter")
	require.Equal(t, med.StepCloseRefund, med.Next(got, time.Now()))
	require.Equal(t, dict.RejectionNoBalance, med.Closing(got).RejectionReason, "the deadline's close")
}

// returnWhileLocked runs the report's Return while another transaction
// holds the PIX's credit (as another devolução or hold of the PIX does),
// waits until the Return waits for it (past its check of return_until
// before the locks), then until the report's return_until has passed by
// the database's clock, and lets it go on: what the Return answered.
func (f *fixture) returnWhileLocked(r med.Report) (med.Report, bool, error) {
	return f.returnWhileLockedThen(r, nil)
}

// returnWhileLockedThen is returnWhileLocked running then (nil: nothing)
// after return_until has passed, before the credit is let go: what happens
// after the 90 days while the Return waits.
func (f *fixture) returnWhileLockedThen(r med.Report, then func()) (med.Report, bool, error) {
	t, ctx := f.t, context.Background()
	holder, err := f.s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(ctx) }()
	_, err = holder.Exec(ctx, `SELECT 1 FROM pix_credits WHERE end_to_end_id = $1 FOR NO KEY UPDATE`, r.EndToEndID)
	require.NoError(t, err)
	type result struct {
		r       med.Report
		changed bool
		err     error
	}
	done := make(chan result, 1)
	go func() {
		out, changed, err := f.store.Return(ctx, r)
		done <- result{out, changed, err}
	}()
	dbtest.WaitBlockedBy(t, f.s, holder.Conn().PgConn().PID())
	require.Eventually(t, func() bool {
		var passed bool
		require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT return_until < clock_timestamp() FROM pix_med_reports WHERE id = $1`, r.ID).Scan(&passed))
		return passed
	}, 10*time.Second, 10*time.Millisecond)
	if then != nil {
		then()
	}
	require.NoError(t, holder.Commit(ctx))
	got := <-done
	return got.r, got.changed, got.err
}
