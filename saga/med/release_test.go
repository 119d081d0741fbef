package med_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// stoppedNotAsOurs is review r21 MED-2's state ("P3"), a DIRECT DICT
// participant: 3,000 of 10,000 returned (its devolução made), then the
// request CLOSED REJECTED at the DICT by someone outside the run (our copy
// says so); the run's CloseRefund would send PARTIALLY_ACCEPTED, and stops
// visibly (dict_not_as_ours), no DICT call. It returns the account.
func (f *fixture) stoppedNotAsOurs() (string, med.Report) {
	ctx := context.Background()
	account, _, req := f.partReturnedNotClosed()
	r := f.step(f.store.IntakeRefund(ctx, closedRejectedCopy(req)))
	a := newActivityRun(f.t, f, r)
	_, err := a.run(a.acts.CloseRefundRequest, r)
	r = f.requireStopped(err, r)
	require.Empty(f.t, a.dict.ops, "no DICT call")
	require.Nil(f.t, r.RefundClosedAt)
	require.Equal(f.t, med.StatusAwaitingCredit, r.Status)
	return account, r
}

// money is account's balance and held.
func (f *fixture) money(account string) (balance, held int64) {
	f.t.Helper()
	require.NoError(f.t, f.s.Pool().QueryRow(context.Background(),
		`SELECT balance_cents, held_cents FROM accounts WHERE id = $1`, account).Scan(&balance, &held))
	return balance, held
}

// requireReleasedOnce checks that hold was released, with one
// pix.hold.released event.
func (f *fixture) requireReleasedOnce(hold uuid.UUID) {
	f.t.Helper()
	var status string
	var released int
	ctx := context.Background()
	require.NoError(f.t, f.s.Pool().QueryRow(ctx, `SELECT status FROM pix_holds WHERE id = $1`, hold).Scan(&status))
	require.Equal(f.t, "released", status)
	require.NoError(f.t, f.s.Pool().QueryRow(ctx, `SELECT count(*) FROM outbox_events
		WHERE aggregate_id = $1 AND event_type = 'pix.hold.released'`, hold.String()).Scan(&released))
	require.Equal(f.t, 1, released, "the hold released once")
}

// Review r21 MED-2: in the P3 state nothing more is ever returned on the
// report (its request CLOSED REJECTED at the DICT), yet its hold kept
// filling from the customer's later credits, held until an operator
// decided it. The CLOSED REJECTED copy taken in stops the hold filling in
// its transaction: a credit after it adds nothing to the hold. Seen
// failing on the old code (the credit held: held 5,000).
func TestACreditInTheStoppedRejectedStateFillsNothing(t *testing.T) {
	f := newFixture(t)
	account, r := f.stoppedNotAsOurs()
	balance, held := f.money(account)
	f.creditMore(account, 5_000)
	f.requireMoney(account, balance+5_000, held)
	require.EqualValues(t, held, f.get(r).HeldCents, "nothing added to the hold")
	f.requireBooks()
}

// pastReturnUntil moves the report r's return_until, and its hold's
// fill-until, a second into the past by the database's clock, as time
// passing would (the hold was made filling until the report's
// return_until): the report as it is then.
func (f *fixture) pastReturnUntil(r med.Report) med.Report {
	f.t.Helper()
	_, err := f.s.Pool().Exec(context.Background(), `WITH r AS (
		UPDATE pix_med_reports SET return_until = statement_timestamp() - interval '1 second' WHERE id = $1 RETURNING hold_id, return_until)
		UPDATE pix_holds h SET fill_until = r.return_until FROM r WHERE h.id = r.hold_id AND h.fill_until IS NOT NULL`, r.ID)
	require.NoError(f.t, err)
	return f.get(r)
}

// Review r21 MED-2 and issue 37: past return_until nothing is returned
// (Return changes nothing), so the report's hold fills no more from then
// on: the core stops it in the credit's own transaction, by the database's
// clock (the hold fills until the report's return_until:
// db.NewHold.FillUntil), with no transaction of the report's between (the
// saga's fence, stopFilling, came only with the report's next transaction:
// a credit in the minute between was held, from the customer, until the
// report ended). Seen failing on the old code (held 4,000), and on the old
// Fill statement.
func TestACreditPastReturnUntilFillsNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	account, r := f.awaitingCredit()
	r = f.requireFillsNothingPastReturnUntil(account, r, "a MED's hold fills until its report's return_until")
	require.Equal(t, r.Gen, f.get(r).Gen, "no transaction of the report's")

	// Before return_until the hold fills on, as before.
	account, r = f.awaitingCredit()
	f.step(f.store.NoteProblem(ctx, r, med.ProblemRefused+": close the refund request: dict: Forbidden"))
	balance, held := f.money(account)
	f.creditMore(account, 4_000)
	f.requireMoney(account, balance+4_000, held+4_000)
}

// requireFillsNothingPastReturnUntil requires the hold of r (of account) to
// fill until r's return_until (why: how it got it), then moves r past it
// (pastReturnUntil): a credit of 4,000 fills nothing. The report as it is
// then.
func (f *fixture) requireFillsNothingPastReturnUntil(account string, r med.Report, why string) med.Report {
	f.t.Helper()
	hold, err := f.s.GetHold(context.Background(), *r.HoldID)
	require.NoError(f.t, err)
	require.NotNil(f.t, hold.FillUntil, why)
	require.True(f.t, hold.FillUntil.Equal(*r.ReturnUntil))
	r = f.pastReturnUntil(r)
	balance, held := f.money(account)
	f.creditMore(account, 4_000)
	f.requireMoney(account, balance+4_000, held)
	f.requireBooks()
	return r
}

// The operator's way out of P3: the release ends the report
// operator_released, what it holds (the credits that filled it before the
// fence) released once, the account's money available again, the
// operator's details kept; no DICT call. Again (another key), refused.
func TestAnOperatorReleasesAStoppedReportOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	account, _, req := f.partReturnedNotClosed()
	f.creditMore(account, 2_000) // fills the hold before the request is rejected
	r := f.step(f.store.IntakeRefund(ctx, closedRejectedCopy(req)))
	a := newActivityRun(t, f, r)
	_, err := a.run(a.acts.CloseRefundRequest, r)
	r = f.requireStopped(err, r)
	require.EqualValues(t, 2_000, r.HeldCents)
	hold := *r.HoldID
	balance, _ := f.money(account)

	out, changed, err := f.store.ReleaseKeyed(ctx, nil, r.ID, "  rejeitado no DICT por terceiro  ", "ops-1", nil)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, med.StatusEnded, out.Status)
	require.Equal(t, med.EndOperatorReleased, *out.EndCause)
	require.Equal(t, "ops-1", *out.ReleasedBy)
	require.Equal(t, "rejeitado no DICT por terceiro", *out.ReleaseDetails)
	require.Nil(t, out.HoldID)
	require.EqualValues(t, 3_000, out.ReturnedCents)
	f.requireReleasedOnce(hold)
	f.requireMoney(account, balance, 0)
	f.requireBooks()
	require.Equal(t, med.StepDone, med.Next(out, time.Now()))

	_, _, err = f.store.ReleaseKeyed(ctx, nil, r.ID, "de novo", "ops-2", nil)
	require.ErrorIs(t, err, med.ErrNotReleasable)
	f.requireReleasedOnce(hold)
}

// Never on a guess: a report not stopped, or whose request is OPEN at the
// DICT (money may still be owed there), or ended, is refused, nothing
// changed; an unknown id is not found; details are required.
func TestAnOperatorReleaseIsRefusedWhereMoneyMayBeOwed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	account, r, req := f.partReturnedNotClosed()
	_, _, err := f.store.ReleaseKeyed(ctx, nil, r.ID, "x", "ops-1", nil)
	require.ErrorIs(t, err, med.ErrNotReleasable, "not stopped, its request OPEN")
	r = f.step(f.store.NoteProblem(ctx, r, med.ProblemRefused+": close the refund request: dict: Forbidden"))
	_, _, err = f.store.ReleaseKeyed(ctx, nil, r.ID, "x", "ops-1", nil)
	require.ErrorIs(t, err, med.ErrNotReleasable, "stopped, its request OPEN at the DICT")
	r = f.step(f.store.IntakeRefund(ctx, closedRejectedCopy(req)))
	r = f.step(f.store.NoteProblem(ctx, r, med.ProblemNotAsOurs+": x"))
	_, _, err = f.store.ReleaseKeyed(ctx, nil, r.ID, " ", "ops-1", nil)
	require.Error(t, err, "no details")
	require.NotErrorIs(t, err, med.ErrNotReleasable)
	_, _, err = f.store.ReleaseKeyed(ctx, nil, uuid.New(), "x", "ops-1", nil)
	require.ErrorIs(t, err, med.ErrNotFound)
	require.Equal(t, r.Gen, f.get(r).Gen, "nothing changed")
	_, held := f.money(account)
	require.EqualValues(t, r.HeldCents, held)
}

// The release and the run's own step at once (a part returned, our close
// recorded PARTIALLY_ACCEPTED, the report stopped past its return_until:
// the run's Finish ends it returned_in_part): one ends the report, the
// other changes nothing; the hold released once, the books exact.
func TestAReleaseAndTheRunsFinishAtOnceHaveOneWinner(t *testing.T) {
	for range 3 {
		f := newFixture(t)
		ctx := context.Background()
		account, r := f.awaitingCredit()
		r = f.step(f.store.NoteProblem(ctx, r, med.ProblemRefused+": x"))
		late := f.store.WithClock(func() time.Time { return r.ReturnUntil.Add(time.Second) })
		require.Equal(t, med.StepFinish, med.Next(r, r.ReturnUntil.Add(time.Second)))
		hold := *r.HoldID

		var wg sync.WaitGroup
		var finished, released bool
		var finishErr, releaseErr error
		wg.Go(func() { _, finished, finishErr = late.Finish(ctx, r) })
		wg.Go(func() { _, released, releaseErr = late.ReleaseKeyed(ctx, nil, r.ID, "decidido", "ops-1", nil) })
		wg.Wait()
		require.NoError(t, finishErr)
		if releaseErr != nil {
			require.True(t, errors.Is(releaseErr, med.ErrNotReleasable), "%v", releaseErr)
		}
		require.True(t, finished != released, "one winner: finished %v, released %v", finished, released)
		out := f.get(r)
		require.Equal(t, med.StatusEnded, out.Status)
		f.requireReleasedOnce(hold)
		f.requireMoney(account, 0, 0) // 10,000 credited, 7,000 spent, 3,000 returned
		f.requireBooks()
	}
}

// The route: an operator's release under an Idempotency-Key (replayed,
// the run woken once), refused again with another key, refused where money
// may be owed, an unknown id missing (med_report_not_found, recorded on
// its key as every refusal of a keyed route), a customer's token refused
// (403) before anything.
func TestTheReleaseRoute(t *testing.T) {
	f := newFixture(t)
	sig := &sagatest.Signals{}
	account, r := f.stoppedNotAsOurs()
	a := f.routes(sig, api.Deps{Keys: operatorKeys}, sagatest.Callers{
		"ops":      sagatest.Operator("ops-1"),
		"customer": sagatest.Customer("cust", account),
	})
	path := "/pix/med/reports/" + r.ID.String() + "/release"
	body := map[string]any{"details": "rejeitado no DICT por terceiro após devolução parcial"}

	status, refused := a.Call(http.MethodPost, path, "customer", uuid.NewString(), body)
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, "insufficient_scope", sagatest.Code(refused))
	status, invalid := a.Call(http.MethodPost, path, "ops", uuid.NewString(), map[string]any{"details": ""})
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", invalid)
	require.Equal(t, "invalid_request", sagatest.Code(invalid))
	status, invalid = a.Call(http.MethodPost, path, "ops", uuid.NewString(), map[string]any{"details": "x", "force": true})
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", invalid)
	status, missing := a.Call(http.MethodPost, "/pix/med/reports/"+uuid.NewString()+"/release", "ops", uuid.NewString(), body)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", missing) // a keyed route's refusal, as analysis'
	require.Equal(t, "med_report_not_found", sagatest.Code(missing))
	require.Empty(t, sig.Sent())

	key := uuid.NewString()
	status, released := a.Call(http.MethodPost, path, "ops", key, body)
	require.Equal(t, http.StatusCreated, status, "%v", released)
	require.Equal(t, "ended", released["status"])
	require.Equal(t, med.EndOperatorReleased, released["end_cause"])
	require.Equal(t, "ops-1", released["released_by"])
	require.Equal(t, body["details"], released["release_details"])
	require.EqualValues(t, 0, released["held_cents"])
	status, again := a.Call(http.MethodPost, path, "ops", key, body)
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, released, again, "the key's answer")
	require.Equal(t, []string{"pix-med:" + r.ID.String() + " changed"}, sig.Sent(), "its run woken once")

	status, conflict := a.Call(http.MethodPost, path, "ops", uuid.NewString(), body)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", conflict)
	require.Equal(t, "med_report_not_releasable", sagatest.Code(conflict))
	f.requireMoney(account, f.balance(account), 0)

	// A report whose request is OPEN at the DICT: refused.
	_, open, _ := f.partReturnedNotClosed()
	f.step(f.store.NoteProblem(context.Background(), open, med.ProblemRefused+": x"))
	status, conflict = a.Call(http.MethodPost, "/pix/med/reports/"+open.ID.String()+"/release", "ops", uuid.NewString(), body)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", conflict)
	require.Equal(t, "med_report_not_releasable", sagatest.Code(conflict))
}

// balance is account's balance.
func (f *fixture) balance(account string) int64 {
	b, _ := f.money(account)
	return b
}

// The run stopped at its request's close in the P3 state (dict_not_as_ours:
// it tries again every ProblemRetryAfter) ends once an operator released
// its report: woken by the release's signal, it reads the report ended and
// finishes at once, no other step taken.
func TestARunStoppedInP3EndsAfterTheRelease(t *testing.T) {
	r := stoppedP3()
	env, s := newRun(t, r)
	s.stops = map[string]int{"CloseRefundRequest": 1_000}
	releasedAt := 2 * time.Hour
	env.RegisterDelayedCallback(func() {
		s.set(func(r *med.Report) {
			r.Status, r.EndCause, r.HoldID, r.HeldCents = med.StatusEnded, ptr(med.EndOperatorReleased), nil, 0
		})
	}, releasedAt)

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

	out := result(t, env)
	require.Equal(t, med.EndOperatorReleased, *out.EndCause)
	require.Equal(t, []time.Time{start}, s.called("CloseRefundRequest"), "stopped once, never tried again")
	loads := s.called("LoadReport")
	require.Less(t, loads[len(loads)-1].Sub(start.Add(releasedAt)), time.Minute, "ended at the release, not at the stop's retry")
	require.Empty(t, s.called("FinishReport"))
	require.Empty(t, s.called("CloseKeptRequests"))
}

// A run stopped at the DICT whose report's return_until comes before
// ProblemRetryAfter tries its step again a minute past return_until, not
// 6 hours after the stop: that transaction stops the report's hold filling
// (stopFilling) at once.
func TestAStoppedRunTriesAgainAtReturnUntil(t *testing.T) {
	r, tries := stoppedRunTries(t, nil)
	require.GreaterOrEqual(t, len(tries), 3)
	require.Equal(t, []time.Time{start, r.ReturnUntil.Add(time.Minute), r.ReturnUntil.Add(time.Minute + med.ProblemRetryAfter)}, tries[:3])
}

// stoppedRunTries runs stoppedP3, its return_until 2 hours after its
// start, its close stopped twice, the report released at 20 hours, and
// returns the report and the times its close was tried. version, when
// not nil, is what the run's GetVersion of the retry at return_until
// answers (the test env's mock: a run of an older build).
func stoppedRunTries(t *testing.T, version *workflow.Version) (med.Report, []time.Time) {
	r := stoppedP3()
	r.ReturnUntil = ptr(start.Add(2 * time.Hour))
	env, s := newRun(t, r)
	if version != nil {
		env.OnGetVersion("pix-med-retry-at-return-until", workflow.DefaultVersion, 1).Return(*version)
	}
	s.stops = map[string]int{"CloseRefundRequest": 2}
	env.RegisterDelayedCallback(func() {
		s.set(func(r *med.Report) {
			r.Status, r.EndCause, r.HoldID = med.StatusEnded, ptr(med.EndOperatorReleased), nil
		})
	}, 20*time.Hour)

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

	result(t, env)
	return r, s.called("CloseRefundRequest")
}

// stoppedP3 is the report of the P3 state as the run reads it: a part
// returned, its request CLOSED REJECTED at the DICT outside the run, our
// close not recorded.
func stoppedP3() med.Report {
	r := received()
	r.AnalysisResult, r.AnalysisDetails = ptr(string(dict.Agreed)), ptr("")
	r.Status, r.DICTStatus = med.StatusAwaitingCredit, string(dict.ReportClosed)
	r.RefundRequestID, r.RefundRequestCents = ptr(uuid.New()), ptr(int64(10_000))
	r.RefundRequestState, r.RefundRequestDICTResult = ptr(string(dict.RefundClosed)), ptr(string(dict.Rejected))
	r.Returns, r.ReturnedCents, r.FirstRtrID, r.HoldID = 1, 3_000, ptr("D12345678202612061200aaaaaaaaaaa"), ptr(uuid.New())
	return r
}

// A report's hold fills until its return_until (db.NewHold.FillUntil), and
// past it keeps what it fills to, which counts against its PIX's room
// (TakenCents) and may still be raised (RaiseFillTo): harmless only
// because no devolução of the PIX is made from then on, the room being
// what devoluções of it may take. So return_until is never before the
// instant the PIX's devolução window closes (ReturnWindow is
// pix.RefundWindow, counted from the same instant as db.LockCredit's):
// moved, as time passing would, a millisecond past return_until, a
// devolução of the PIX is refused as out of its window, not for its room.
func TestAReportsReturnUntilIsNotBeforeItsPIXsRefundWindowCloses(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(10_000, 0)
	r := f.intake(report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour)))
	require.NotNil(t, r.ReturnUntil)
	_, err := f.s.Pool().Exec(ctx, `WITH d AS (SELECT ($2::timestamptz - statement_timestamp()) + interval '1 millisecond' AS by)
		UPDATE pix_credits SET credited_at = credited_at - d.by, received_at = received_at - d.by FROM d WHERE end_to_end_id = $1`,
		c.EndToEndID, *r.ReturnUntil)
	require.NoError(t, err)
	err = db.InTx(ctx, f.s.Pool(), func(tx pgx.Tx) error {
		_, err := db.RecordRefund(ctx, tx, db.NewRefund{ID: pix.NewRefundID(),
			RefundRequest: pix.RefundRequest{EndToEndID: c.EndToEndID, AmountCents: 1, Reason: "devolução"}}, nil, "test")
		return err
	})
	require.ErrorIs(t, err, pix.ErrRefundWindowClosed)
}
