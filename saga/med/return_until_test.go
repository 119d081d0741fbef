package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/med"
)

// Attack review r11 LOW-2: a report's return_until was its PIX's
// credited_at + 90 days, while the PIX's devolução window closes at its
// received_at + 90 days (db.LockCredit): a PIX credited after it was
// received (an inbox backlog) left a gap in which a part was refused
// CANNOT_REFUND and the hold filled on with no devolução possible.
// return_until is now the window's close, the same instant, whether the
// report is taken in credited or becomes ours at an intake after its
// credit. Seen failing on the old intake (return_until 10 minutes after
// received_at + 90 days).
func TestReturnUntilIsThePIXsDevolucaoWindowsClose(t *testing.T) {
	f := newFixture(t)
	c := f.credit(10_000, 0)
	f.receivedBefore(c.EndToEndID, 10*time.Minute, time.Now())
	f.requireReturnUntilIsTheWindow(f.intake(report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))))

	// Reported before its credit (not ours), ours at its next intake.
	in := report(pix.NewEndToEndID("12345678", time.Now()), dict.ReportOpen, time.Now().Add(-time.Hour))
	require.Equal(t, med.StatusNotOurs, f.intake(in).Status)
	dbtest.CreditPIX(t, f.s, dbtest.PIX{EndToEndID: in.TransactionID, AmountCents: 5_000})
	f.receivedBefore(in.TransactionID, 10*time.Minute, time.Now())
	ours := f.intake(in)
	require.Equal(t, med.StatusReceived, ours.Status)
	f.requireReturnUntilIsTheWindow(ours)
}

// The r11 probe's scenario: a PIX received 10 s before its credit, whose
// window closes while its report waits for credits; a part comes after
// it. With return_until at credited_at + 90 days the run's Return was
// still within it and met the window's refusal: return_refused
// refund_window_closed, the request to be closed REJECTED CANNOT_REFUND,
// though the same report without the part closes NO_BALANCE at its
// deadline. Now both end at the same instant: past it, the Return changes
// nothing, and the request is closed as the deadline closes it. Seen
// failing on the old intake (return_refused refund_window_closed).
func TestNoRefusalBetweenTheWindowAndReturnUntil(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(10_000, 0)
	require.NoError(t, f.spend(c.AccountID, 10_000))
	var now time.Time
	require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now))
	// Credited 90 days less 13 s ago, received 10 s before: its window
	// closes 3 s from now, 10 s before credited_at + 90 days.
	f.receivedBefore(c.EndToEndID, 10*time.Second, now.Add(-med.ReturnWindow+13*time.Second))
	r := f.agreedOn(c)
	r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	r = f.step(f.store.Return(ctx, r))
	require.Equal(t, med.StatusAwaitingCredit, r.Status)
	require.Zero(t, r.Returns)
	got := f.partAfterTheWindowChangesNothing(c, r)
	require.Equal(t, med.StepCloseRefund, med.Next(got, time.Now()))
}

// partAfterTheWindowChangesNothing credits 2,000 into c's account, which
// fills r's hold, waits until c's devolução window has closed, then checks
// that r's Return changes nothing: no refusal recorded, what arrived held,
// the request to be closed as the deadline closes it (NO_BALANCE).
func (f *fixture) partAfterTheWindowChangesNothing(c dbtest.Credited, r med.Report) med.Report {
	t, ctx := f.t, context.Background()
	f.creditMore(c.AccountID, 2_000) // fills the hold: a return would capture it
	require.Eventually(t, func() bool {
		var closed bool
		require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT received_at + $2::interval < clock_timestamp() FROM pix_credits
			WHERE end_to_end_id = $1`, c.EndToEndID, pix.RefundWindow).Scan(&closed))
		return closed
	}, 10*time.Second, 10*time.Millisecond, "the PIX's window closes")
	r, err := f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.EqualValues(t, 2_000, r.HeldCents)

	got, changed, err := f.store.Return(ctx, r)
	require.NoError(t, err)
	if got.ReturnRefused != nil {
		t.Fatalf("refused after the PIX's window closed: return_refused %s, its request to be closed %s %s", *got.ReturnRefused,
			med.Closing(got).Result, med.Closing(got).RejectionReason)
	}
	require.False(t, changed)
	require.Equal(t, dict.RejectionNoBalance, med.Closing(got).RejectionReason, "the deadline's close, not CANNOT_REFUND")
	f.requireMoney(c.AccountID, 2_000, 2_000)
	return got
}

// receivedBefore makes the PIX e2e credited at credited, received by before
// it (an inbox backlog between its receipt and its credit).
func (f *fixture) receivedBefore(e2e string, by time.Duration, credited time.Time) {
	_, err := f.s.Pool().Exec(context.Background(), `UPDATE pix_credits SET credited_at = $2, received_at = $2::timestamptz - $3::interval
		WHERE end_to_end_id = $1`, e2e, credited, by)
	require.NoError(f.t, err)
}

// requireReturnUntilIsTheWindow checks that r's return_until is the
// instant its PIX's devolução window closes (db.LockCredit's).
func (f *fixture) requireReturnUntilIsTheWindow(r med.Report) {
	var closes time.Time
	require.NoError(f.t, f.s.Pool().QueryRow(context.Background(), `SELECT COALESCE(received_at, credited_at) + $2::interval
		FROM pix_credits WHERE end_to_end_id = $1`, r.EndToEndID, pix.RefundWindow).Scan(&closes))
	require.NotNil(f.t, r.ReturnUntil)
	require.True(f.t, closes.Equal(*r.ReturnUntil), "return_until %s, the PIX's window closes at %s", r.ReturnUntil, closes)
}

// Attack review r12 MED-1: a report taken in before return_until became
// its PIX's window's close keeps credited_at + 90 days, later than the
// window by the inbox's backlog then. A part met in that gap was refused
// (return_refused refund_window_closed, the request to be closed REJECTED
// CANNOT_REFUND, PixMEDReturnRefused firing) where the same report without
// the part closes NO_BALANCE at its end. The window closed is the deadline
// for a report returned in parts: nothing changes. Seen failing on the
// Return before it (return_refused refund_window_closed).
func TestAnOlderReportsGapAfterTheWindowIsNoRefusal(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(10_000, 0)
	require.NoError(t, f.spend(c.AccountID, 10_000))
	var now time.Time
	require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now))
	// Credited 90 days less 13 s ago, received 10 s before: its window
	// closes 3 s from now, the older rule's return_until 13 s from now.
	credited := now.Add(-med.ReturnWindow + 13*time.Second)
	f.receivedBefore(c.EndToEndID, 10*time.Second, credited)
	r := f.agreedOn(c)
	_, err := f.s.Pool().Exec(ctx, `UPDATE pix_med_reports SET return_until = $2 WHERE id = $1`, r.ID, credited.Add(med.ReturnWindow))
	require.NoError(t, err)
	r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	r = f.step(f.store.Return(ctx, r))
	require.Equal(t, med.StatusAwaitingCredit, r.Status)
	require.True(t, r.ReturnUntil.Equal(credited.Add(med.ReturnWindow)), "the older rule's return_until: %s", r.ReturnUntil)
	got := f.partAfterTheWindowChangesNothing(c, r)
	require.Equal(t, med.StepCloseRefund, med.Next(got, got.ReturnUntil.Add(time.Second)), "its end closes the request")
}
