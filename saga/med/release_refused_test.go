package med_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// Review r24: an operator's release frees only a report on which nothing
// more can be returned: its request CLOSED REJECTED at the DICT by our
// copy, or its return_until passed by the database's clock. Each case
// below was released on the old code (seen failing: no error).

// requireNotReleasable checks that a release of r is refused, nothing
// changed: the report open, its generation and hold as they were.
func (f *fixture) requireNotReleasable(store *med.Store, r med.Report, why string) {
	f.t.Helper()
	before := f.get(r)
	_, changed, err := store.ReleaseKeyed(context.Background(), nil, r.ID, "decidido à mão", "ops-1", nil)
	require.ErrorIs(f.t, err, med.ErrNotReleasable, why)
	require.False(f.t, changed, why)
	after := f.get(r)
	require.Equal(f.t, before.Gen, after.Gen, "%s: nothing changed", why)
	require.True(f.t, after.Open(), why)
	require.Equal(f.t, before.HoldID, after.HoldID, why)
}

// stoppedOn notes a stop at the DICT on r, as the run's read-back makes it.
func (f *fixture) stoppedOn(r med.Report) med.Report {
	r = f.step(f.store.NoteProblem(context.Background(), r, med.ProblemNotAsOurs+": the DICT's copy is not as ours"))
	require.NotNil(f.t, r.DICTProblem)
	return r
}

// HIGH-1 (a): a part returned, the request's copy CLOSED PARTIALLY_ACCEPTED
// (our close's answer lost, the lister's copy taken), the run stopped on
// its read-back: the returns in parts go on until return_until, so no
// release before it; past it (the store's clock), released.
func TestNoReleaseOfARequestAcceptedInPartBeforeReturnUntil(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, _, req := f.partReturnedNotClosed()
	accepted := req
	accepted.Status, accepted.AnalysisResult, accepted.LastModified = dict.RefundClosed, dict.PartiallyAccepted, time.Now()
	r := f.stoppedOn(f.step(f.store.IntakeRefund(ctx, accepted)))
	require.Equal(t, string(dict.RefundClosed), *r.RefundRequestState)
	require.Equal(t, string(dict.PartiallyAccepted), *r.RefundRequestDICTResult)
	f.requireNotReleasable(f.store, r, "CLOSED PARTIALLY_ACCEPTED before return_until")

	late := f.store.WithClock(func() time.Time { return r.ReturnUntil.Add(time.Second) })
	out, changed, err := late.ReleaseKeyed(ctx, nil, r.ID, "decidido à mão", "ops-1", nil)
	require.NoError(t, err, "past return_until nothing more is returned")
	require.True(t, changed)
	require.Equal(t, med.EndOperatorReleased, *out.EndCause)
	f.requireBooks()
}

// HIGH-1 (b): the request's copy CLOSED with no result said (it may be
// accepted): refused.
func TestNoReleaseOfARequestClosedWithoutAResult(t *testing.T) {
	f := newFixture(t)
	_, r, _ := f.partReturnedNotClosed()
	r = f.stoppedOn(f.closedWithoutResult(r))
	f.requireNotReleasable(f.store, r, "CLOSED without a result")
}

// HIGH-1 (c): our close recorded REJECTED, the DICT's copy accepted
// (againstOurClose: dict_not_as_ours): refused, though our record says
// rejected (closedRejected).
func TestNoReleaseWhereTheDICTAcceptedOurRejectedClose(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, r := f.nothingReturned()
	r = f.step(f.store.RefundClosed(ctx, r, ""))
	accepted := request(r, 10_000, dict.RefundClosed)
	accepted.ID, accepted.AnalysisResult, accepted.LastModified = r.RefundRequestID.String(), dict.TotallyAccepted, time.Now()
	r = f.step(f.store.IntakeRefund(ctx, accepted))
	require.NotNil(t, r.DICTProblem, "against our close: stopped")
	require.True(t, med.ClosedRejected(r), "our record says rejected")
	require.False(t, med.RejectedAtTheDICT(r), "the DICT's copy does not")
	f.requireNotReleasable(f.store, r, "accepted at the DICT against our REJECTED")
}

// HIGH-2: a request CANCELLED at the DICT leaves the report to take the
// requester's next one (its run ends it, keeping and closing a later
// one); a release would end it operator_released, which takes none.
// Refused, before return_until and past it.
func TestNoReleaseOfACancelledRequest(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, r, req := f.partReturnedNotClosed()
	f.stoppedOn(r)
	cancelled := req
	cancelled.Status, cancelled.LastModified = dict.RefundCancelled, time.Now()
	r = f.step(f.store.IntakeRefund(ctx, cancelled))
	require.NotNil(t, r.DICTProblem)
	f.requireNotReleasable(f.store, r, "CANCELLED")
	late := f.store.WithClock(func() time.Time { return r.ReturnUntil.Add(time.Second) })
	f.requireNotReleasable(late, r, "CANCELLED, past return_until")
}

// MED-2: a devolução in flight (returning, its RefundID), then the
// request CLOSED REJECTED at the DICT and the run stopped: refused, its
// Settle must run on the open report.
func TestNoReleaseWhileADevolucaoIsInFlight(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	account, r, req := f.partReturnedNotClosed()
	f.creditMore(account, 2_000)
	r = f.step(f.store.Return(ctx, f.get(r)))
	require.Equal(t, med.StatusReturning, r.Status)
	require.NotNil(t, r.RefundID)
	r = f.step(f.store.IntakeRefund(ctx, closedRejectedCopy(req)))
	r = f.stoppedOn(r)
	require.True(t, med.RejectedAtTheDICT(r))
	f.requireNotReleasable(f.store, r, "a devolução in flight")
}

// LOW-2: a caller's subject longer than released_by takes, or details
// with a control character (the database's text takes no NUL): a declared
// refusal, never the database's error.
func TestAReleaseRefusesWhatTheRowCantKeep(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, r := f.stoppedNotAsOurs()
	long := strings.Repeat("a", med.MaxReleasedByLength+1)
	for _, c := range []struct{ details, by string }{{"x", long}, {"a\x00b", "ops-1"}, {"a\x01b", "ops-1"}} {
		_, _, err := f.store.ReleaseKeyed(ctx, nil, r.ID, c.details, c.by, nil)
		var invalid *pix.ValidationError
		require.ErrorAs(t, err, &invalid, "%q by %d characters", c.details, len(c.by))
	}
	require.Equal(t, r.Gen, f.get(r).Gen)
	_, changed, err := f.store.ReleaseKeyed(ctx, nil, r.ID, "ok", long[:med.MaxReleasedByLength], nil)
	require.NoError(t, err)
	require.True(t, changed)
}

// MED-1: a run of a build before retryAtReturnUntilChange (its history
// has no marker: the default version) waits ProblemRetryAfter after a
// stop, as it did, never the retry at return_until: its recorded timers
// replay. Seen failing on the old code (tried again at return_until).
func TestAStoppedRunOfAnOlderBuildWaitsProblemRetryAfter(t *testing.T) {
	old := workflow.DefaultVersion
	_, tries := stoppedRunTries(t, &old)
	require.GreaterOrEqual(t, len(tries), 2)
	require.Equal(t, []time.Time{start, start.Add(med.ProblemRetryAfter)}, tries[:2])
}

// LOW-2, LOW-3 through the routes: details with a control character (a
// NUL reached the database's text: 500), on the release and on the
// analysis, and a caller's subject longer than released_by takes (the
// column's check: 500), are declared refusals (422 invalid_request),
// nothing changed. Seen failing on the old code (500).
func TestTheOperatorRoutesRefuseWhatTheRowCantKeep(t *testing.T) {
	f := newFixture(t)
	sig := &sagatest.Signals{}
	_, stopped := f.stoppedNotAsOurs()
	received := f.intake(report(f.credit(10_000, 0).EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour)))
	long := strings.Repeat("s", med.MaxReleasedByLength+1)
	a := f.routes(sig, api.Deps{Keys: operatorKeys}, sagatest.Callers{
		"ops": sagatest.Operator("ops-1"), "long": sagatest.Operator(long),
	})
	for _, c := range []struct {
		caller, path string
		body         map[string]any
	}{
		{"ops", "/pix/med/reports/" + stopped.ID.String() + "/release", map[string]any{"details": "a\u0000b"}},
		{"ops", "/pix/med/reports/" + stopped.ID.String() + "/release", map[string]any{"details": "a\u001bb"}},
		{"ops", "/pix/med/reports/" + received.ID.String() + "/analysis", map[string]any{"result": "AGREED", "details": "a\u0000b"}},
		{"long", "/pix/med/reports/" + stopped.ID.String() + "/release", map[string]any{"details": "ok"}},
	} {
		status, got := a.Call(http.MethodPost, c.path, c.caller, uuid.NewString(), c.body)
		require.Equal(t, http.StatusUnprocessableEntity, status, "%s %v: %v", c.path, c.body, got)
		require.Equal(t, "invalid_request", sagatest.Code(got))
	}
	require.Equal(t, stopped.Gen, f.get(stopped).Gen)
	require.Equal(t, received.Gen, f.get(received).Gen)
	require.Empty(t, sig.Sent())
}

// A hold made without a fill-until (before migration 0063, or by an older
// build while the release rolled out) of a report whose run is stopped is
// given its report's return_until in the report's next transaction
// (stopFilling, db.SetFillUntil), under the hold's locks in their one order
// (its PIX's credit, its account, then the hold, after the report's): a
// credit waiting for the account first fills it and keeps what it filled
// (LOW-1: the fence never frees a fill that came before its lock), the
// report's transaction then sets the fence (no deadlock), and a credit
// after it, past return_until, fills nothing.
func TestALegacyHoldOfAStoppedReportGetsItsFillUntilAfterTheCreditsBefore(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	account, r := f.awaitingCredit()
	r = f.step(f.store.NoteProblem(ctx, r, med.ProblemRefused+": close the refund request: dict: Forbidden"))
	_, err := f.s.Pool().Exec(ctx, `UPDATE pix_holds SET fill_until = NULL WHERE id = $1`, *r.HoldID) // an older build's
	require.NoError(t, err)
	r = f.pastReturnUntil(r)
	balance, held := f.money(account)

	tx, err := f.s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	var locker int
	require.NoError(t, tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM accounts WHERE id = $1 FOR UPDATE`, account).Scan(&locker))
	credited, noted := make(chan struct{}), make(chan error, 1)
	go func() { defer close(credited); f.creditMore(account, 4_000) }()
	creditor := f.waitBlocked(ctx, locker)
	go func() {
		_, _, err := f.store.NoteProblem(ctx, r, med.ProblemRefused+": close the refund request: dict: Forbidden")
		noted <- err
	}()
	f.waitBlocked(ctx, locker, creditor)
	require.NoError(t, tx.Commit(ctx))
	<-credited
	require.NoError(t, <-noted)

	f.requireMoney(account, balance+4_000, held+4_000) // no fence yet when it filled: kept
	hold, err := f.s.GetHold(ctx, *r.HoldID)
	require.NoError(t, err)
	require.NotNil(t, hold.FillUntil)
	require.True(t, hold.FillUntil.Equal(*r.ReturnUntil))
	f.requireBooks()
	f.creditMore(account, 1_000)
	f.requireMoney(account, balance+5_000, held+4_000) // the fence made: fills no more
}

// waitBlocked waits for a backend other than those named in by to wait
// on one of them (pg_blocking_pids), and returns its pid.
func (f *fixture) waitBlocked(ctx context.Context, by ...int) int {
	f.t.Helper()
	var pid int
	require.Eventually(f.t, func() bool {
		err := f.s.Pool().QueryRow(ctx, `SELECT pid FROM pg_stat_activity
			WHERE NOT (pid = ANY($1)) AND pg_blocking_pids(pid) && $1::int[] LIMIT 1`, by).Scan(&pid)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "a backend blocked by %v", by)
	return pid
}
