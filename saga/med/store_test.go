package med_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/broker/eventschema"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/reconcile"
	refundsaga "github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/saga/sagatest"
	"github.com/pixbank/pix/saga/transfer"
)

type fixture struct {
	t     *testing.T
	s     *db.Store
	store *med.Store
}

func newFixture(t *testing.T) *fixture {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	s := dbtest.New(t)
	return &fixture{t: t, s: s, store: med.NewStore(s)}
}

// credit credits a PIX of amount to a new account that had opening.
func (f *fixture) credit(amount, opening int64) dbtest.Credited {
	return dbtest.CreditPIX(f.t, f.s, dbtest.PIX{AmountCents: amount, OpeningBalanceCents: opening})
}

// creditMore credits another PIX of amount to account (a later credit)
// and returns its end_to_end_id.
func (f *fixture) creditMore(account string, amount int64) string {
	f.t.Helper()
	return dbtest.CreditPIX(f.t, f.s, dbtest.PIX{AccountID: account, AmountCents: amount}).EndToEndID
}

// spend debits amount of account through the transfer's path (the one
// debit, which spends the available balance only).
func (f *fixture) spend(account string, amount int64) error {
	ctx := context.Background()
	res, _, err := f.s.ReserveKey(ctx, "customer-1", uuid.New(), "h", db.KeyPolicy{LockFor: time.Minute, KeepFor: time.Hour})
	require.NoError(f.t, err)
	_, err = transfer.NewStore(f.s).CreateTransfer(ctx, *res, db.NewTransfer{ID: uuid.New(), EndToEndID: pix.NewEndToEndID("12345678", time.Now()),
		TransferRequest: pix.TransferRequest{AccountID: account, AmountCents: amount, PixKey: "maria@example.com"}},
		func(t pix.Transfer) ([]byte, error) { return json.Marshal(t) })
	return err
}

func (f *fixture) requireMoney(account string, balance, held int64) {
	f.t.Helper()
	var b, h int64
	require.NoError(f.t, f.s.Pool().QueryRow(context.Background(),
		`SELECT balance_cents, held_cents FROM accounts WHERE id = $1`, account).Scan(&b, &h))
	require.Equal(f.t, [2]int64{balance, held}, [2]int64{b, h}, "balance, held of %s", account)
}

// requireBooks: the reconciliation finds nothing (I2, I9, I11).
func (f *fixture) requireBooks() {
	f.t.Helper()
	rec, err := reconcile.NewStore(f.s).Reconcile(context.Background())
	require.NoError(f.t, err)
	require.True(f.t, rec.Balanced(), "%+v", rec)
}

// doorsOf is the saga's doors over s, as its receivers call them (the
// intake is theirs only), its runs' signals recorded.
func doorsOf(s *med.Store) *med.Doors {
	return &med.Doors{Store: s, Temporal: &sagatest.Signals{}, Log: sagatest.Discard()}
}

// report is the DICT's report of a PIX, as the lister or the webhook hand it.
func report(e2e string, status dict.InfractionReportStatus, modified time.Time) dict.InfractionReport {
	return dict.InfractionReport{ID: uuid.NewString(), TransactionID: e2e, InfractionType: dict.InfractionFraud,
		ReportedBy: dict.ReportedByDebited, ReportDetails: "golpe do falso parente", Status: status,
		DebitedParticipant: "99999999", CreditedParticipant: "12345678",
		CreationTime: modified, LastModified: modified}
}

func (f *fixture) intake(in dict.InfractionReport) med.Report {
	f.t.Helper()
	r, changed, err := doorsOf(f.store).Intake(context.Background(), in)
	require.NoError(f.t, err)
	require.True(f.t, changed)
	return r
}

func (f *fixture) step(r med.Report, changed bool, err error) med.Report {
	f.t.Helper()
	require.NoError(f.t, err)
	require.True(f.t, changed, "report %s at %s gen %d: no change", r.ID, r.Status, r.Gen)
	return r
}

// held is a report of a PIX of amount (the account had opening) taken
// through intake, hold and acknowledgement.
func (f *fixture) held(amount, opening int64) (dbtest.Credited, med.Report) {
	ctx := context.Background()
	c := f.credit(amount, opening)
	in := report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
	r := f.intake(in)
	r = f.step(f.store.Hold(ctx, r))
	in.Status, in.LastModified = dict.ReportAcknowledged, in.LastModified.Add(time.Minute)
	return c, f.step(f.store.Acknowledged(ctx, r, in))
}

// analysed is a held report analysed AGREED, not closed at the DICT yet.
func (f *fixture) analysed(amount, opening int64) (dbtest.Credited, med.Report) {
	ctx := context.Background()
	c, r := f.held(amount, opening)
	f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "fraude confirmada", "operator-1"))
	r, err := f.store.Get(ctx, r.ID)
	require.NoError(f.t, err)
	return c, r
}

// agreed is a held report analysed AGREED and closed at the DICT.
func (f *fixture) agreed(amount, opening int64) (dbtest.Credited, med.Report) {
	c, r := f.analysed(amount, opening)
	return c, f.step(f.store.Closed(context.Background(), r, dict.InfractionReport{}))
}

// request is the payer's participant's refund request of amount for r.
func request(r med.Report, amount int64, status dict.RefundStatus) dict.Refund {
	return dict.Refund{ID: uuid.NewString(), TransactionID: r.EndToEndID, RefundReason: dict.RefundFraud,
		RefundAmount: dict.Amount(amount), Status: status, InfractionReportID: r.ID.String()}
}

// A report of a PIX we credited is recorded received and due for its run;
// the same report again is absorbed; modified at the DICT since, it is
// updated (and its run woken).
func TestIntakeIsIdempotentAndTakesModifications(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(10_000, 0)
	in := report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
	r := f.intake(in)
	require.Equal(t, med.StatusReceived, r.Status)
	require.Equal(t, c.AccountID, *r.AccountID)
	require.EqualValues(t, 10_000, *r.AmountCents)
	require.NotNil(t, r.DispatchDueAt)
	require.WithinDuration(t, in.CreationTime.Add(med.AnalysisWindow), r.AnalysisDueAt, time.Millisecond)
	f.requireReturnUntilIsTheWindow(r)     // received_at + 90 days
	f.requireMoney(c.AccountID, 10_000, 0) // the run holds, not the intake

	again, changed, err := doorsOf(f.store).Intake(ctx, in)
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, r.Gen, again.Gen)

	in.Status, in.LastModified = dict.ReportCancelled, in.LastModified.Add(time.Minute)
	cancelled, changed, err := doorsOf(f.store).Intake(ctx, in)
	require.NoError(t, err)
	require.True(t, changed)
	require.True(t, cancelled.Cancelled())
	require.Greater(t, cancelled.Gen, r.Gen)

	// An older copy (a lister's page that lagged) changes nothing back.
	in.Status, in.LastModified = dict.ReportOpen, in.LastModified.Add(-30*time.Second)
	late, changed, err := doorsOf(f.store).Intake(ctx, in)
	require.NoError(t, err)
	require.False(t, changed)
	require.True(t, late.Cancelled())

	// The same id for another PIX is refused.
	in.TransactionID = pix.NewEndToEndID("12345678", time.Now())
	_, _, err = doorsOf(f.store).Intake(ctx, in)
	require.ErrorIs(t, err, med.ErrReportMismatch)
}

// A report of a PIX we did not credit is recorded, visibly, as not ours:
// nothing held, no run.
func TestAReportNotOursStartsNothing(t *testing.T) {
	f := newFixture(t)
	r := f.intake(report(pix.NewEndToEndID("87654321", time.Now()), dict.ReportOpen, time.Now()))
	require.Equal(t, med.StatusNotOurs, r.Status)
	require.Nil(t, r.AccountID)
	require.Nil(t, r.DispatchDueAt)
	out, changed, err := f.store.Hold(context.Background(), r)
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, med.StatusNotOurs, out.Status)
}

// Two intakes of one report at once, each twice: one row, made once.
func TestTwoIntakesAtOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for range 5 {
		c := f.credit(10_000, 0)
		in := report(c.EndToEndID, dict.ReportOpen, time.Now())
		var wg sync.WaitGroup
		var mu sync.Mutex
		changes := 0
		start := make(chan struct{})
		for range 4 {
			wg.Go(func() {
				<-start
				_, changed, err := doorsOf(f.store).Intake(ctx, in)
				require.NoError(t, err)
				if changed {
					mu.Lock()
					changes++
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		require.Equal(t, 1, changes)
		var rows int
		require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT count(*) FROM pix_med_reports WHERE end_to_end_id = $1`, c.EndToEndID).Scan(&rows))
		require.Equal(t, 1, rows)
	}
}

// The hold takes what the account has if less than the PIX; nothing
// available holds nothing, visibly. A hold asked again (a retried
// activity, at the generation it read) holds nothing more.
func TestHoldTakesWhatIsAvailableOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(10_000, 0)
	require.NoError(t, f.spend(c.AccountID, 6_000))
	r := f.intake(report(c.EndToEndID, dict.ReportOpen, time.Now()))
	h := f.step(f.store.Hold(ctx, r))
	require.EqualValues(t, 4_000, h.HeldCents)
	require.Equal(t, 1, h.Holds)
	again, changed, err := f.store.Hold(ctx, r)
	require.NoError(t, err)
	require.False(t, changed, "a retry at the old generation")
	require.Equal(t, h, again)
	f.requireMoney(c.AccountID, 4_000, 4_000)

	c2 := f.credit(5_000, 0)
	require.NoError(t, f.spend(c2.AccountID, 5_000))
	r2 := f.intake(report(c2.EndToEndID, dict.ReportOpen, time.Now()))
	h2 := f.step(f.store.Hold(ctx, r2))
	require.Equal(t, med.StatusHeld, h2.Status)
	require.NotNil(t, h2.HoldID, "a hold that fills, holding nothing yet")
	require.Zero(t, h2.HeldCents)
	// The account's next credit fills it in the credit's own transaction:
	// none of it is spendable, whenever the run comes.
	f.creditMore(c2.AccountID, 2_000)
	f.requireMoney(c2.AccountID, 2_000, 2_000)
	require.ErrorIs(t, f.spend(c2.AccountID, 1), pix.ErrInsufficientFunds)
	seen, err := f.store.Get(ctx, r2.ID)
	require.NoError(t, err)
	require.EqualValues(t, 2_000, seen.HeldCents, "what the hold holds now, as the customer's view says")
	f.requireBooks()
}

// DISAGREED: the close releases the hold and ends the report; the close
// recorded again (a lost answer, the activity retried) changes nothing.
func TestDisagreedReleases(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.held(10_000, 0)
	f.requireMoney(c.AccountID, 10_000, 10_000)
	a := f.step(f.store.Analyse(ctx, r.ID, dict.Disagreed, "cliente comprovou a venda", "operator-1"))
	require.Equal(t, med.StatusAnalysed, a.Status)
	_, changed, err := f.store.Analyse(ctx, r.ID, dict.Disagreed, "cliente comprovou a venda", "operator-2")
	require.NoError(t, err)
	require.False(t, changed)
	_, _, err = f.store.Analyse(ctx, r.ID, dict.Agreed, "mudei de ideia", "operator-2")
	require.ErrorIs(t, err, med.ErrAnalysed)

	done := f.step(f.store.Closed(ctx, a, dict.InfractionReport{}))
	require.Equal(t, med.StatusEnded, done.Status)
	require.Equal(t, med.EndReleased, *done.EndCause)
	require.Nil(t, done.DispatchDueAt)
	_, changed, err = f.store.Closed(ctx, a, dict.InfractionReport{})
	require.NoError(t, err)
	require.False(t, changed)
	f.requireMoney(c.AccountID, 10_000, 0)
	f.requireBooks()
}

// An analysis that came before the acknowledgement: the report goes from
// held straight to analysed.
func TestAnalysisBeforeTheAcknowledgement(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(10_000, 0)
	r := f.intake(report(c.EndToEndID, dict.ReportOpen, time.Now()))
	f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "", "operator-1"))
	r, err := f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, med.StatusReceived, r.Status)
	r = f.step(f.store.Hold(ctx, r))
	r = f.step(f.store.Acknowledged(ctx, r, dict.InfractionReport{}))
	require.Equal(t, med.StatusAnalysed, r.Status)
}

// AGREED and no refund request within 72 hours: released at its time, not
// before.
func TestNoRequestWithin72HoursReleases(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.agreed(10_000, 0)
	require.Equal(t, med.StatusAwaitingRequest, r.Status)
	require.WithinDuration(t, r.ClosedAt.Add(med.RequestWindow), *r.RequestDueAt, time.Millisecond)
	_, _, err := f.store.ExpireRequest(ctx, r, time.Now())
	require.Error(t, err, "before its time")
	done := f.step(f.store.ExpireRequest(ctx, r, r.RequestDueAt.Add(med.ExpiryCovered)))
	require.Equal(t, med.EndReleased, *done.EndCause)
	f.requireMoney(c.AccountID, 10_000, 0)
	f.requireBooks()
}

// The reporter's cancel and our close at once: whichever the lock serves
// first, the report ends once, its hold released once; a cancel after
// the close still releases while no return has begun.
func TestCloseAndCancelAtOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for round := range 6 {
		c, r := f.held(10_000, 0)
		a := f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "", "operator-1"))
		in := report(c.EndToEndID, dict.ReportCancelled, time.Now())
		in.ID = r.ID.String()
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			_, _, err := f.store.Closed(ctx, a, dict.InfractionReport{})
			require.NoError(t, err)
		})
		wg.Go(func() {
			<-start
			_, _, err := doorsOf(f.store).Intake(ctx, in)
			require.NoError(t, err)
		})
		close(start)
		wg.Wait()
		cur, err := f.store.Get(ctx, r.ID)
		require.NoError(t, err)
		require.True(t, cur.Cancelled(), "round %d", round)
		// The run reads it and cancels (a retried cancel changes nothing).
		done := f.step(f.store.Cancel(ctx, cur))
		require.Equal(t, med.EndCancelled, *done.EndCause)
		_, changed, err := f.store.Cancel(ctx, cur)
		require.NoError(t, err)
		require.False(t, changed)
		f.requireMoney(c.AccountID, 10_000, 0)
	}
	f.requireBooks()
}

// The request arriving as its 72 hours end: the release and the return at
// once, each twice; one wins, the hold ends once (released, or captured
// by the one devolução).
func TestReleaseAndCaptureAtOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	late := f.store.WithClock(func() time.Time { return time.Now().Add(med.RequestWindow + time.Minute) })
	for round := range 6 {
		c, r := f.agreed(10_000, 0)
		// The request's intake raced the expiry's read: both decide on r's
		// generation, or the request's.
		withRequest := f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
		acts := []func() (med.Report, bool, error){
			func() (med.Report, bool, error) {
				return late.ExpireRequest(ctx, r, time.Now().Add(med.RequestWindow+time.Minute))
			},
			func() (med.Report, bool, error) { return f.store.Return(ctx, withRequest) },
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 4 {
			act := acts[(i+round)%2]
			wg.Go(func() {
				<-start
				_, _, err := act()
				require.NoError(t, err)
			})
		}
		close(start)
		wg.Wait()
		cur, err := f.store.Get(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, med.StatusReturning, cur.Status, "the expiry read the report before the request: stale")
		f.requireMoney(c.AccountID, 0, 0)
		var refunds int
		require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT count(*) FROM pix_refunds WHERE end_to_end_id = $1`, c.EndToEndID).Scan(&refunds))
		require.Equal(t, 1, refunds, "one devolução")
	}
	f.requireBooks()
}

// An expiry decided on the report before the request's intake finds its
// generation moved and changes nothing; the expiry on the new generation
// with an open request changes nothing either.
func TestAStaleExpiryChangesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	late := f.store.WithClock(func() time.Time { return time.Now().Add(med.RequestWindow + time.Minute) })
	c, r := f.agreed(10_000, 0)
	withRequest := f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	for _, at := range []med.Report{r, withRequest} {
		out, changed, err := late.ExpireRequest(ctx, at, time.Now().Add(med.RequestWindow+time.Minute))
		require.NoError(t, err)
		require.False(t, changed)
		require.Equal(t, med.StatusAwaitingRequest, out.Status)
	}
	f.requireMoney(c.AccountID, 10_000, 10_000)
}

// The whole return of what was held: the devolução captures the hold, the
// report waits for it, then closes TOTALLY; a retried Return or Settle
// changes nothing.
func TestReturnAll(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.agreed(10_000, 0)
	req := request(r, 10_000, dict.RefundOpen)
	r = f.step(f.store.IntakeRefund(ctx, req))
	_, changed, err := f.store.IntakeRefund(ctx, req)
	require.NoError(t, err)
	require.False(t, changed, "the same request again")
	ret := f.step(f.store.Return(ctx, r))
	require.Equal(t, med.StatusReturning, ret.Status)
	_, changed, err = f.store.Return(ctx, r)
	require.NoError(t, err)
	require.False(t, changed)
	f.requireMoney(c.AccountID, 0, 0)
	out, changed, err := f.store.Settle(ctx, ret)
	require.NoError(t, err)
	require.False(t, changed, "the devolução still open")
	require.Equal(t, ret, out)
	_, err = refundsaga.NewStore(f.s).MarkRefundReturned(ctx, *ret.RefundID, "D12345678202612061200abcdefghijk")
	require.NoError(t, err)
	s := f.step(f.store.Settle(ctx, ret))
	require.Equal(t, med.StatusAwaitingCredit, s.Status)
	require.EqualValues(t, 10_000, s.ReturnedCents)
	require.Equal(t, "D12345678202612061200abcdefghijk", *s.FirstRtrID)
	_, changed, err = f.store.Settle(ctx, ret)
	require.NoError(t, err)
	require.False(t, changed)
	_, changed, err = f.store.Finish(ctx, s)
	require.NoError(t, err)
	require.False(t, changed, "not before the request's close at the DICT")
	closed := f.step(f.store.RefundClosed(ctx, s, *s.FirstRtrID))
	done := f.step(f.store.Finish(ctx, closed))
	require.Equal(t, med.EndReturned, *done.EndCause)
	f.requireMoney(c.AccountID, 0, 0)
	f.requireBooks()
}

// The account had less than the PIX: the part held is returned, the next
// hold taken in the capture's transaction, which the account's later
// inflows fill in their own transactions (never spendable between two
// tries of the run), each part returned as it is held, until the amount; a
// devolução not made comes back into the report's hold, held in the
// reversal's transaction, and is returned again.
func TestReturnInParts(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(10_000, 0)
	require.NoError(t, f.spend(c.AccountID, 7_000))
	in := report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
	r := f.intake(in)
	r = f.step(f.store.Hold(ctx, r))
	require.EqualValues(t, 3_000, r.HeldCents)
	r = f.step(f.store.Acknowledged(ctx, r, dict.InfractionReport{}))
	f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "", "operator-1"))
	r, err := f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	r = f.step(f.store.Closed(ctx, r, dict.InfractionReport{}))
	r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	refunds := refundsaga.NewStore(f.s)
	returning := func(r med.Report) int64 {
		t.Helper()
		refund, err := f.s.GetRefund(ctx, *r.RefundID)
		require.NoError(t, err)
		return refund.AmountCents
	}

	r = f.step(f.store.Return(ctx, r))
	require.EqualValues(t, 3_000, returning(r))
	require.NotNil(t, r.HoldID, "the hold, kept by the capture")
	require.Zero(t, r.HeldCents)
	_, err = refunds.MarkRefundReturned(ctx, *r.RefundID, "D12345678202612061200aaaaaaaaaaa")
	require.NoError(t, err)
	r = f.step(f.store.Settle(ctx, r))
	r = f.step(f.store.RefundClosed(ctx, r, *r.FirstRtrID))
	// Nothing arrived: nothing changes, nothing ends before the 90 days
	// (a finish asked before them is a "not yet").
	_, changed, err := f.store.Return(ctx, r)
	require.NoError(t, err)
	require.False(t, changed)
	_, changed, err = f.store.Finish(ctx, r)
	require.ErrorContains(t, err, "not yet")
	require.False(t, changed)
	require.Equal(t, r.Gen, f.get(r).Gen)
	f.creditMore(c.AccountID, 4_000)
	f.requireMoney(c.AccountID, 4_000, 4_000)
	require.ErrorIs(t, f.spend(c.AccountID, 1), pix.ErrInsufficientFunds, "held in the credit's transaction")
	r = f.step(f.store.Return(ctx, r))
	require.EqualValues(t, 4_000, returning(r))
	_, err = refunds.ReverseRefund(ctx, *r.RefundID, "NAO_REALIZADO", false)
	require.NoError(t, err)
	f.requireMoney(c.AccountID, 4_000, 4_000)
	r = f.step(f.store.Settle(ctx, r))
	require.EqualValues(t, 3_000, r.ReturnedCents, "a devolução not made returned nothing")
	require.EqualValues(t, 4_000, r.HeldCents, "the reversal held its money again in the report's hold")
	f.creditMore(c.AccountID, 5_000)
	f.requireMoney(c.AccountID, 9_000, 7_000)
	r = f.step(f.store.Return(ctx, r))
	require.EqualValues(t, 7_000, returning(r))
	require.NotNil(t, r.HoldID, "one hold, kept to the end")
	f.requireMoney(c.AccountID, 2_000, 0)
	_, err = refunds.MarkRefundReturned(ctx, *r.RefundID, "D12345678202612061200bbbbbbbbbbb")
	require.NoError(t, err)
	r = f.step(f.store.Settle(ctx, r))
	require.EqualValues(t, 10_000, r.ReturnedCents)
	require.Equal(t, 2, r.Returns)
	done := f.step(f.store.Finish(ctx, r))
	require.Equal(t, med.EndReturned, *done.EndCause)
	f.requireMoney(c.AccountID, 2_000, 0)
	f.requireBooks()
}

// returnedAndSettled takes the refund request req in, returns it through
// the devolução saga, has the PSP return that devolução (its rtrId rtr)
// and settles the report: its return recorded, the request's close next.
func (f *fixture) returnedAndSettled(req dict.Refund, rtr string) med.Report {
	return f.step(f.store.Settle(context.Background(), f.returnedByPSP(req, rtr)))
}

// returnedByPSP is returnedAndSettled but the Settle: the report
// returning, its devolução returned by the PSP.
func (f *fixture) returnedByPSP(req dict.Refund, rtr string) med.Report {
	t, ctx := f.t, context.Background()
	r := f.step(f.store.IntakeRefund(ctx, req))
	r = f.step(f.store.Return(ctx, r))
	_, err := refundsaga.NewStore(f.s).MarkRefundReturned(ctx, *r.RefundID, rtr)
	require.NoError(t, err)
	return r
}

// returnedInPart is a report whose refund request of 10,000 had 3,000
// returned (the account spent 7,000 of its PIX first) and was closed:
// awaiting credit until its 90 days.
func (f *fixture) returnedInPart() med.Report {
	ctx := context.Background()
	_, r := f.agreedAfterSpending(7_000)
	r = f.returnedAndSettled(request(r, 10_000, dict.RefundOpen), "D12345678202612061200aaaaaaaaaaa")
	r = f.step(f.store.RefundClosed(ctx, r, *r.FirstRtrID))
	return r
}

// agreedAfterSpending is a report of a PIX of 10,000 (to an account that
// had nothing else) of which the account spent spent before the report
// came: held (what was left), acknowledged, analysed AGREED and closed.
func (f *fixture) agreedAfterSpending(spent int64) (dbtest.Credited, med.Report) {
	c := f.credit(10_000, 0)
	require.NoError(f.t, f.spend(c.AccountID, spent))
	return c, f.agreedOn(c)
}

// agreedOn is a report of c's PIX received now: held, acknowledged,
// analysed AGREED and closed.
func (f *fixture) agreedOn(c dbtest.Credited) med.Report {
	t, ctx := f.t, context.Background()
	r := f.intake(report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour)))
	r = f.step(f.store.Hold(ctx, r))
	r = f.step(f.store.Acknowledged(ctx, r, dict.InfractionReport{}))
	f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "", "operator-1"))
	r, err := f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	return f.step(f.store.Closed(ctx, r, dict.InfractionReport{}))
}

// At the 90 days, what is held is released and the report ends returned
// in part.
func TestReturnsEndAt90Days(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r := f.returnedInPart()
	after := f.store.WithClock(func() time.Time { return r.ReturnUntil.Add(time.Minute) })
	_, changed, err := after.Return(ctx, r)
	require.NoError(t, err)
	require.False(t, changed, "no return after the 90 days")
	done := f.step(after.Finish(ctx, r))
	require.Equal(t, med.EndReturnedInPart, *done.EndCause)
	require.EqualValues(t, 3_000, done.ReturnedCents)
	f.requireBooks()
}

// The MED's deadlines are the database's: they are decided by its clock,
// read in the deciding transaction, never by the worker's. Here the
// worker's clock runs an hour ahead of the database's
// (dbtest.NewClockBehind); a report returned in part whose 90 days end in
// 10 minutes by the database's clock, 50 minutes past by the worker's, is
// not finished yet.
func TestTheDatabasesClockDecidesTheMEDsDeadlines(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	s := dbtest.NewClockBehind(t, time.Hour)
	f := &fixture{t: t, s: s, store: med.NewStore(s)}
	ctx := context.Background()
	r := f.returnedInPart()
	_, err := s.Pool().Exec(ctx, `UPDATE pix_med_reports SET return_until = now() + interval '10 minutes' WHERE id = $1`, r.ID)
	require.NoError(t, err)

	_, changed, err := f.store.Finish(ctx, r)
	require.ErrorContains(t, err, "not yet")
	require.False(t, changed, "finished before its 90 days")
	require.Equal(t, med.StatusAwaitingCredit, f.get(r).Status)

	// The worker's own clock would have finished it: the clocks differ.
	done := f.step(f.store.WithClock(time.Now).Finish(ctx, r))
	require.Equal(t, med.EndReturnedInPart, *done.EndCause)
	f.requireBooks()
}

// A transition decided on a generation the report has moved past changes
// nothing, even where it would still apply: the run reads the report and
// decides again (the fence).
func TestADecisionOnAnOldGenerationChangesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(10_000, 0)
	r := f.intake(report(c.EndToEndID, dict.ReportOpen, time.Now()))
	now := f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "", "operator-1"))
	out, changed, err := f.store.Hold(ctx, r)
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, now, out)
	f.requireMoney(c.AccountID, 10_000, 0)
	f.step(f.store.Hold(ctx, now))
	f.requireMoney(c.AccountID, 10_000, 10_000)
}

// A report its reporter cancelled is not returned, even with a refund
// request open: its run cancels it, the hold released.
func TestACancelledReportIsNotReturned(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.agreed(10_000, 0)
	f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	in := report(c.EndToEndID, dict.ReportCancelled, time.Now().Add(time.Minute))
	in.ID = r.ID.String()
	cur := f.intake(in)
	require.Equal(t, med.StepCancel, med.Next(cur, time.Now()))
	_, changed, err := f.store.Return(ctx, cur)
	require.NoError(t, err)
	require.False(t, changed)
	done := f.step(f.store.Cancel(ctx, cur))
	require.Equal(t, med.EndCancelled, *done.EndCause)
	f.requireMoney(c.AccountID, 10_000, 0)
	f.requireBooks()
}

// A report missing what the DICT always sends is refused before anything
// is read or written (a validation error, not a constraint's).
func TestAMalformedReportIsRefused(t *testing.T) {
	f := newFixture(t)
	c := f.credit(10_000, 0)
	in := report(c.EndToEndID, dict.ReportOpen, time.Now())
	in.InfractionType = ""
	_, _, err := doorsOf(f.store).Intake(context.Background(), in)
	var invalid *pix.ValidationError
	require.ErrorAs(t, err, &invalid)
	_, err = f.store.Get(context.Background(), uuid.MustParse(in.ID))
	require.ErrorIs(t, err, med.ErrNotFound)
}

// The report's events, each payload checked against its JSON Schema: one
// at its intake and one per change of its status, never the reporter's
// words.
func TestEventsFollowTheStatus(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.agreed(10_000, 0)
	r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	r = f.step(f.store.Return(ctx, r))
	v, err := eventschema.New()
	require.NoError(t, err)
	rs, err := f.s.Pool().Query(ctx, `SELECT event_type, payload FROM outbox_events WHERE aggregate_type = 'pix_med_report' AND aggregate_id = $1 ORDER BY seq`, r.ID.String())
	require.NoError(t, err)
	defer rs.Close()
	var statuses []string
	for rs.Next() {
		var typ string
		var payload []byte
		require.NoError(t, rs.Scan(&typ, &payload))
		require.NoError(t, v.Payload(typ, payload), "%s: %s", typ, payload)
		require.NotContains(t, string(payload), "falso parente")
		var p struct{ Status string }
		require.NoError(t, json.Unmarshal(payload, &p))
		statuses = append(statuses, p.Status)
	}
	require.NoError(t, rs.Err())
	require.Equal(t, []string{med.StatusReceived, med.StatusHeld, med.StatusAcknowledged, med.StatusAnalysed,
		med.StatusAwaitingRequest, med.StatusReturning}, statuses)
	f.requireMoney(c.AccountID, 0, 0)
}

// The gauges read what is open, held, due soon and stopped at the DICT.
func TestTheGauges(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, r := f.held(10_000, 0)
	f.step(f.store.NoteProblem(ctx, r, "refused"))
	got, err := f.store.Open(ctx, 8*24*time.Hour)
	require.NoError(t, err)
	require.GreaterOrEqual(t, got.Open, int64(1))
	require.GreaterOrEqual(t, got.AnalysisDueSoon, int64(1))
	require.GreaterOrEqual(t, got.HeldCents, int64(10_000))
	require.GreaterOrEqual(t, got.DICTProblems, int64(1))
}

// A refund request that comes after its report was released at its 72
// hours (listed late) is never stored OPEN on the ended report: the report
// takes it again when its money can still be returned (its run started
// anew, the return made), and otherwise (a report DISAGREED, returned) it
// is recorded by its own id, unanswered and counted for on-call, the
// report unchanged.
func TestALateRequestIsReopenedOrPaged(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.agreed(10_000, 0)
	r = f.step(f.store.ExpireRequest(ctx, r, r.RequestDueAt.Add(med.ExpiryCovered)))
	require.Equal(t, med.StatusEnded, r.Status)
	f.requireMoney(c.AccountID, 10_000, 0)
	reopened := f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	require.Equal(t, med.StatusAwaitingRequest, reopened.Status)
	require.Nil(t, reopened.EndCause)
	require.NotNil(t, reopened.DispatchDueAt, "due for a new run")
	require.Equal(t, med.StepReturn, med.Next(reopened, time.Now()))
	ret := f.step(f.store.Return(ctx, reopened))
	require.Equal(t, med.StatusReturning, ret.Status)
	f.requireMoney(c.AccountID, 0, 0)

	_, disagreed := f.held(10_000, 0)
	f.step(f.store.Analyse(ctx, disagreed.ID, dict.Disagreed, "", "operator-1"))
	disagreed, err := f.store.Get(ctx, disagreed.ID)
	require.NoError(t, err)
	disagreed = f.step(f.store.Closed(ctx, disagreed, dict.InfractionReport{}))
	require.Equal(t, med.StatusEnded, disagreed.Status)
	before, err := f.store.Open(ctx, time.Hour)
	require.NoError(t, err)
	out, changed, err := f.store.IntakeRefund(ctx, request(disagreed, 10_000, dict.RefundOpen))
	require.NoError(t, err)
	require.False(t, changed, "the ended report is not changed")
	require.Nil(t, out.RefundRequestID, "never stored OPEN on the ended report")
	require.Equal(t, med.StatusEnded, out.Status)
	after, err := f.store.Open(ctx, time.Hour)
	require.NoError(t, err)
	require.Equal(t, before.Unanswered+1, after.Unanswered, "counted for on-call")
	f.requireBooks()
}

// A second refund request of a report whose first was closed in part never
// writes over the first: the report keeps the first's id and amount (its
// returns count against it), the second is recorded by its own id.
func TestASecondRequestNeverRewritesTheFirst(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, r := f.agreed(10_000, 0)
	first := request(r, 10_000, dict.RefundOpen)
	r = f.returnedAndSettled(first, "D12345678202612061200abcdefghijk")
	r = f.step(f.store.RefundClosed(ctx, r, "D12345678202612061200abcdefghijk"))

	second := request(r, 3_000, dict.RefundOpen)
	out, changed, err := f.store.IntakeRefund(ctx, second)
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, first.ID, out.RefundRequestID.String(), "the report answers its first request")
	require.EqualValues(t, 10_000, *out.RefundRequestCents)
	require.EqualValues(t, 10_000, out.ReturnedCents)
	var amount int64
	var why string
	require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT amount_cents, why FROM pix_med_refund_requests WHERE id = $1`,
		second.ID).Scan(&amount, &why))
	require.Equal(t, int64(3_000), amount)
	require.Equal(t, "another_request", why)
}

// A return refused for good (the PIX's devolução window closed) is a
// business outcome, not a failure of the run: recorded, the request closed
// REJECTED, the report ended and its hold released, never retried.
func TestAReturnPastItsWindowIsAnOutcome(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.agreed(10_000, 0)
	r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	_, err := f.s.Pool().Exec(ctx, `UPDATE pix_credits SET credited_at = credited_at - interval '91 days',
		received_at = received_at - interval '91 days' WHERE end_to_end_id = $1`, c.EndToEndID)
	require.NoError(t, err)
	out, changed, err := f.store.Return(ctx, r)
	require.NoError(t, err, "not a failure of the run")
	require.True(t, changed)
	require.Equal(t, "refund_window_closed", *out.ReturnRefused)
	require.Equal(t, med.StatusAwaitingCredit, out.Status)
	f.requireMoney(c.AccountID, 10_000, 10_000)
	require.Equal(t, med.StepCloseRefund, med.Next(out, time.Now()))
	require.Equal(t, dict.Rejected, med.Closing(out).Result)
	require.Equal(t, dict.RejectionCannotRefund, med.Closing(out).RejectionReason)
	again, changed, err := f.store.Return(ctx, out)
	require.NoError(t, err)
	require.False(t, changed, "never tried again")
	out = f.step(f.store.RefundClosed(ctx, again, ""))
	require.Equal(t, med.StepFinish, med.Next(out, time.Now()))
	out = f.step(f.store.Finish(ctx, out))
	require.Equal(t, med.StatusEnded, out.Status)
	require.Equal(t, med.EndReleased, *out.EndCause)
	f.requireMoney(c.AccountID, 10_000, 0)
	f.requireBooks()
}

// A report that came before its PIX's credit is recorded not ours; once
// the PIX is credited, the report's next intake (the lister's, the PSP's
// redelivery), even unchanged at the DICT, finds the credit: the report is
// ours, received, due for its run.
func TestANotOursReportIsRecheckedAtItsNextIntake(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	e2e := pix.NewEndToEndID("12345678", time.Now())
	in := report(e2e, dict.ReportOpen, time.Now().Add(-time.Hour))
	r := f.intake(in)
	require.Equal(t, med.StatusNotOurs, r.Status)
	again, changed, err := doorsOf(f.store).Intake(ctx, in)
	require.NoError(t, err)
	require.False(t, changed, "still not credited")
	require.Equal(t, med.StatusNotOurs, again.Status)

	c := dbtest.CreditPIX(t, f.s, dbtest.PIX{EndToEndID: e2e, AmountCents: 7_000})
	ours, changed, err := doorsOf(f.store).Intake(ctx, in)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, med.StatusReceived, ours.Status)
	require.Equal(t, c.AccountID, *ours.AccountID)
	require.EqualValues(t, 7_000, *ours.AmountCents)
	require.NotNil(t, ours.DispatchDueAt, "due for its run")
	f.requireReturnUntilIsTheWindow(ours) // received_at + 90 days
	held := f.step(f.store.Hold(ctx, ours))
	require.EqualValues(t, 7_000, held.HeldCents)
	f.requireBooks()
}

// A return in parts and the account's credits at once: whichever the
// locks serve first, every centavo credited is held by the report's next
// hold or returned by its devolução, none is available to spend, and the
// books are exact.
func TestAReturnInPartsRacesTheCredits(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for range 4 {
		c := f.credit(10_000, 0)
		require.NoError(t, f.spend(c.AccountID, 7_000))
		r := f.intake(report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour)))
		r = f.step(f.store.Hold(ctx, r))
		r = f.step(f.store.Acknowledged(ctx, r, dict.InfractionReport{}))
		f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "", "operator-1"))
		r, err := f.store.Get(ctx, r.ID)
		require.NoError(t, err)
		r = f.step(f.store.Closed(ctx, r, dict.InfractionReport{}))
		r = f.returnedAndSettled(request(r, 10_000, dict.RefundOpen), "D12345678202612061200aaaaaaaaaaa")

		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 5 {
			wg.Go(func() {
				<-start
				if i < 3 {
					f.creditMore(c.AccountID, 2_000)
					return
				}
				_, _, err := f.store.Return(ctx, r)
				require.NoError(t, err)
			})
		}
		close(start)
		wg.Wait()
		cur, err := f.store.Get(ctx, r.ID)
		require.NoError(t, err)
		var returning int64
		if cur.RefundID != nil {
			refund, err := f.s.GetRefund(ctx, *cur.RefundID)
			require.NoError(t, err)
			returning = refund.AmountCents
		}
		hold, err := f.s.GetHold(ctx, *cur.HoldID)
		require.NoError(t, err)
		require.EqualValues(t, 6_000, returning+hold.AmountCents, "every centavo credited held or returned")
		f.requireMoney(c.AccountID, 6_000-returning, hold.AmountCents)
	}
	f.requireBooks()
}

// A request of less than the report holds (issue 37, the third review's
// High): the hold is shrunk in place to the request and that part
// captured, never released and held anew. A hold that fills made after the
// report's and still lacking (another MED of the account) would make a hold
// made anew take nothing: the money released would be available for good.
// Debits racing the return never find the money to return available
// (available = balance - held >= 0, held = the active holds). What the
// report held beyond the request goes to that other hold, which lacks it
// (issue 37, attack review B, HIGH1): it is the customer's only when no
// hold of the account lacks it
// (TestWhatAReturnHeldBeyondTheRequestIsTheCustomersWhenNoHoldLacksIt).
func TestAReturnOfLessThanHeldNeverFreesIt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for round := range 4 {
		c, r := f.agreed(10_000, 0)
		require.EqualValues(t, 10_000, r.HeldCents)
		var other pix.Hold
		err := db.InTx(ctx, f.s.Pool(), func(tx pgx.Tx) error {
			var err error
			other, _, err = db.Hold(ctx, tx, db.NewHold{Ref: fmt.Sprintf("another-med:%d", round), AccountID: c.AccountID,
				AmountCents: 5_000, UpTo: true, FillFromCredits: true, Kind: med.HoldKind})
			return err
		})
		require.NoError(t, err)
		require.Zero(t, other.AmountCents, "the report's hold, older, holds all there is")
		r = f.step(f.store.IntakeRefund(ctx, request(r, 6_000, dict.RefundOpen)))

		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 6 {
			wg.Go(func() {
				<-start
				if i%2 == 0 {
					_, _, err := f.store.Return(ctx, r)
					require.NoError(t, err)
					return
				}
				require.ErrorIs(t, f.spend(c.AccountID, 4_001), pix.ErrInsufficientFunds, "the money to return is never available")
			})
		}
		close(start)
		wg.Wait()
		cur, err := f.store.Get(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, med.StatusReturning, cur.Status)
		refund, err := f.s.GetRefund(ctx, *cur.RefundID)
		require.NoError(t, err)
		require.EqualValues(t, 6_000, refund.AmountCents, "the request's amount, captured of the hold")
		require.Equal(t, *r.HoldID, *cur.HoldID, "the same hold, shrunk in place")
		f.requireMoney(c.AccountID, 4_000, 4_000)
		other, err = f.s.GetHold(ctx, uuid.MustParse(other.ID))
		require.NoError(t, err)
		require.EqualValues(t, 4_000, other.AmountCents, "what was held beyond the request fills the other MED's hold, which lacks it")
		require.ErrorIs(t, f.spend(c.AccountID, 1), pix.ErrInsufficientFunds)
	}
	f.requireBooks()
}

// A request of less than the report holds, with no other hold of the
// account lacking: what was held beyond the request is the customer's
// again, at once.
func TestWhatAReturnHeldBeyondTheRequestIsTheCustomersWhenNoHoldLacksIt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.agreed(10_000, 0)
	r = f.step(f.store.IntakeRefund(ctx, request(r, 6_000, dict.RefundOpen)))
	r = f.step(f.store.Return(ctx, r))
	require.Equal(t, med.StatusReturning, r.Status)
	f.requireMoney(c.AccountID, 4_000, 0)
	require.NoError(t, f.spend(c.AccountID, 4_000))
	f.requireBooks()
}

// Two reports of one account: the second's hold, made after the first's
// took all there was, lacks 5,000; the first's request is of 6,000 of the
// 10,000 it holds. Its return shrinks its hold in place, and the 4,000
// beyond go to the second's hold, not to the available balance (issue 37,
// attack review B, HIGH1: db.Shrink fills the holds that lack).
func TestWhatAReturnHeldBeyondTheRequestFillsAnotherReportsHoldThatLacksIt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, first := f.agreed(10_000, 0)
	var second pix.Hold
	require.NoError(t, db.InTx(ctx, f.s.Pool(), func(tx pgx.Tx) error {
		var err error
		second, _, err = db.Hold(ctx, tx, db.NewHold{Ref: "another-med:1", AccountID: c.AccountID,
			AmountCents: 5_000, UpTo: true, FillFromCredits: true, Kind: med.HoldKind})
		return err
	}))
	require.Zero(t, second.AmountCents, "the first report's hold, older, holds all there is")
	first = f.step(f.store.IntakeRefund(ctx, request(first, 6_000, dict.RefundOpen)))
	first = f.step(f.store.Return(ctx, first))
	require.Equal(t, med.StatusReturning, first.Status)
	require.ErrorIs(t, f.spend(c.AccountID, 1), pix.ErrInsufficientFunds, "the 4,000 beyond the request are the second hold's")
	f.requireMoney(c.AccountID, 4_000, 4_000)
	second, err := f.s.GetHold(ctx, uuid.MustParse(second.ID))
	require.NoError(t, err)
	require.EqualValues(t, 4_000, second.AmountCents)
	f.requireBooks()
}

// A devolução that returned all the report held, not made (reversed by the
// PSP: issue 37, the third review's Medium): its money comes back into the
// report's hold in the reversal's own transaction, held, never available,
// and the report, agreed, returns it again.
func TestAReversalAfterAFullCaptureHoldsTheMoneyAgain(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.agreed(10_000, 0)
	r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	r = f.step(f.store.Return(ctx, r))
	f.requireMoney(c.AccountID, 0, 0)
	refunds := refundsaga.NewStore(f.s)
	_, err := refunds.ReverseRefund(ctx, *r.RefundID, "NAO_REALIZADO", false)
	require.NoError(t, err)
	_, err = refunds.ReverseRefund(ctx, *r.RefundID, "NAO_REALIZADO", false)
	require.NoError(t, err, "a reversal run again")
	f.requireMoney(c.AccountID, 10_000, 10_000)
	require.ErrorIs(t, f.spend(c.AccountID, 1), pix.ErrInsufficientFunds, "held before the report's run sees the reversal")
	r = f.step(f.store.Settle(ctx, r))
	require.Equal(t, med.StatusAwaitingCredit, r.Status)
	require.EqualValues(t, 0, r.ReturnedCents)
	require.EqualValues(t, 10_000, r.HeldCents)
	r = f.step(f.store.Return(ctx, r))
	require.Equal(t, med.StatusReturning, r.Status)
	f.requireMoney(c.AccountID, 0, 0)
	_, err = refunds.MarkRefundReturned(ctx, *r.RefundID, "D12345678202612061200ddddddddddd")
	require.NoError(t, err)
	r = f.step(f.store.Settle(ctx, r))
	require.EqualValues(t, 10_000, r.ReturnedCents)
	r = f.step(f.store.RefundClosed(ctx, r, *r.FirstRtrID))
	done := f.step(f.store.Finish(ctx, r))
	require.Equal(t, med.EndReturned, *done.EndCause)
	f.requireMoney(c.AccountID, 0, 0)
	f.requireBooks()
}

// A report whose hold was made before holds filled (between the report's
// store and the fills, issue 37: fill_to_cents NULL; its shape made here in
// SQL), returned whole and in part: the devolução not made gives its money
// back held, in the reversal's transaction, never available (attack review
// LOW5). The return makes the hold one that fills (db.MakeFilling) and
// keeps it: captured whole, it ended, and the reversal's money came back
// spendable.
func TestAReversalAfterALegacyHoldsCaptureHoldsTheMoneyAgain(t *testing.T) {
	for _, c := range []struct {
		name        string
		spent, held int64
	}{
		{name: "whole", spent: 0, held: 10_000},
		{name: "a part", spent: 7_000, held: 3_000},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			cr, r := legacyRequested(t, f, c.spent, c.held)
			r = f.step(f.store.Return(ctx, r))
			require.Equal(t, med.StatusReturning, r.Status)
			f.requireMoney(cr.AccountID, 0, 0)
			_, err := refundsaga.NewStore(f.s).ReverseRefund(ctx, *r.RefundID, "NAO_REALIZADO", false)
			require.NoError(t, err)
			f.requireMoney(cr.AccountID, c.held, c.held)
			require.ErrorIs(t, f.spend(cr.AccountID, 1), pix.ErrInsufficientFunds, "held in the reversal's transaction")
			r = f.step(f.store.Settle(ctx, r))
			require.EqualValues(t, c.held, r.HeldCents, "in the report's hold")
			f.creditMore(cr.AccountID, 5_000)
			want := min(c.held+5_000, 10_000)
			f.requireMoney(cr.AccountID, c.held+5_000, want)
			r = f.step(f.store.Return(ctx, r))
			require.Equal(t, med.StatusReturning, r.Status)
			f.requireMoney(cr.AccountID, c.held+5_000-want, 0)
			f.requireBooks()
		})
	}
}

// Issue 37 (the pattern of attack review r9 MED-1): Finish ended a report
// returned in part up to a minute before its return_until by the
// database's clock (Temporal's timer firing a little early), releasing
// what it held on a deadline not passed. It never ends before
// return_until, not by a second: "not yet", nothing changed, retried.
// Seen failing on the old Finish (ended 20 seconds before its 90 days).
func TestTheMEDNeverEndsBeforeItsReturnUntil(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r := f.returnedInPart()
	_, err := f.s.Pool().Exec(ctx, `UPDATE pix_med_reports SET return_until = now() + interval '20 seconds' WHERE id = $1`, r.ID)
	require.NoError(t, err)
	before := f.get(r)
	_, changed, err := f.store.Finish(ctx, r)
	require.ErrorContains(t, err, "not yet")
	require.False(t, changed)
	after := f.get(r)
	require.Equal(t, med.StatusAwaitingCredit, after.Status)
	require.Equal(t, before.Gen, after.Gen)
	require.Equal(t, before.HeldCents, after.HeldCents)

	_, err = f.s.Pool().Exec(ctx, `UPDATE pix_med_reports SET return_until = now() - interval '1 millisecond' WHERE id = $1`, r.ID)
	require.NoError(t, err)
	done := f.step(f.store.Finish(ctx, r))
	require.Equal(t, med.EndReturnedInPart, *done.EndCause)
	f.requireBooks()
}

// get reads the report r again.
func (f *fixture) get(r med.Report) med.Report {
	f.t.Helper()
	out, err := f.store.Get(context.Background(), r.ID)
	require.NoError(f.t, err)
	return out
}
