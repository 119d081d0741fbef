package med_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/med"
)

// keptStatus is the DICT's status of the refund request id as kept on its
// own in pix_med_refund_requests ("": not kept), and why.
func (f *fixture) keptStatus(id string) (status, why string) {
	f.t.Helper()
	err := f.s.Pool().QueryRow(context.Background(),
		`SELECT dict_status, why FROM pix_med_refund_requests WHERE id = $1`, id).Scan(&status, &why)
	if err != nil {
		require.ErrorContains(f.t, err, "no rows")
	}
	return status, why
}

// notOursYet is a report, recorded not ours (its PIX not credited yet),
// its refund request OPEN (modified at t0) kept on its own, and what makes
// the report ours: the PIX credited and the report's intake.
func (f *fixture) notOursYet(t0 time.Time) (in dict.InfractionReport, r med.Report, open dict.Refund, makeOurs func() med.Report) {
	ctx := context.Background()
	e2e := pix.NewEndToEndID("12345678", time.Now())
	in = report(e2e, dict.ReportClosed, t0.Add(-time.Hour))
	in.AnalysisResult = dict.Agreed
	r = f.intake(in)
	require.Equal(f.t, med.StatusNotOurs, r.Status)
	open = request(r, 5_000, dict.RefundOpen)
	open.CreationTime, open.LastModified = t0, t0
	_, _, err := f.store.IntakeRefund(ctx, open)
	require.NoError(f.t, err)
	status, why := f.keptStatus(open.ID)
	require.Equal(f.t, [2]string{"OPEN", "report_ended"}, [2]string{status, why})
	return in, r, open, func() med.Report {
		dbtest.CreditPIX(f.t, f.s, dbtest.PIX{EndToEndID: e2e, AmountCents: 5_000})
		ours, _, err := doorsOf(f.store).Intake(ctx, in)
		require.NoError(f.t, err)
		require.Equal(f.t, med.StatusReceived, ours.Status)
		return ours
	}
}

// A refund request kept on its own while its report was not ours, then
// cancelled at the DICT, is never taken once the report is ours: an OPEN
// copy delivered after (the lister's overlap, a PSP's redelivery; older or
// later-dated, CANCELLED is final) changes nothing, and no money is
// returned on it. One still OPEN is taken (and leaves the kept table).
func TestAKeptRequestFollowsTheDICTsCancel(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	t0 := time.Now().Add(-time.Minute)
	_, _, open, makeOurs := f.notOursYet(t0)
	cancelled := open
	cancelled.Status, cancelled.LastModified = dict.RefundCancelled, t0.Add(30*time.Second)
	_, _, err := f.store.IntakeRefund(ctx, cancelled)
	require.NoError(t, err)
	status, _ := f.keptStatus(open.ID)
	require.Equal(t, "CANCELLED", status)

	ours := makeOurs()
	for _, stale := range []time.Time{t0, t0.Add(time.Minute)} {
		open.LastModified = stale
		r, changed, err := f.store.IntakeRefund(ctx, open)
		require.NoError(t, err)
		require.False(t, changed, "an OPEN copy (modified %s) after the CANCELLED one", stale)
		require.Nil(t, r.RefundRequestID, "a cancelled request taken by its report")
		require.Equal(t, ours.Gen, r.Gen)
		status, _ := f.keptStatus(open.ID)
		require.Equal(t, "CANCELLED", status)
	}
	counts, err := f.store.Open(ctx, time.Hour)
	require.NoError(t, err)
	require.Zero(t, counts.Unanswered, "cancelled at the DICT: no page")

	// Still OPEN when its report is ours: taken, on-call's no longer.
	_, _, open2, makeOurs2 := f.notOursYet(t0)
	makeOurs2()
	r, changed, err := f.store.IntakeRefund(ctx, open2)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, open2.ID, r.RefundRequestID.String())
	require.Equal(t, string(dict.RefundOpen), *r.RefundRequestState)
	status, _ = f.keptStatus(open2.ID)
	require.Empty(t, status, "taken: no longer kept on its own")
}

// The report made ours, the DICT's cancel of its kept request and an old
// OPEN copy of that request, all at once, then the OPEN copy again: in
// whichever order the locks serve them, the request is never OPEN on the
// report (nothing is returned on it) and the kept row ends CANCELLED or
// gone (taken, then cancelled on the report).
func TestACancelAndTheTakeAtOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for range 8 {
		t0 := time.Now().Add(-time.Minute)
		_, r, open, makeOurs := f.notOursYet(t0)
		cancelled := open
		cancelled.Status, cancelled.LastModified = dict.RefundCancelled, t0.Add(30*time.Second)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		wg.Add(3)
		go func() { defer wg.Done(); makeOurs() }()
		go func() { defer wg.Done(); _, _, errs[0] = f.store.IntakeRefund(ctx, cancelled) }()
		go func() { defer wg.Done(); _, _, errs[1] = f.store.IntakeRefund(ctx, open) }()
		wg.Wait()
		require.NoError(t, errs[0])
		require.NoError(t, errs[1])
		_, _, err := f.store.IntakeRefund(ctx, open)
		require.NoError(t, err)

		got, err := f.store.Get(ctx, r.ID)
		require.NoError(t, err)
		require.False(t, got.RequestOpen(), "a request cancelled at the DICT is OPEN on its report")
		status, _ := f.keptStatus(open.ID)
		if got.RefundRequestID == nil {
			require.Equal(t, "CANCELLED", status)
		} else {
			require.Equal(t, string(dict.RefundCancelled), *got.RefundRequestState)
			require.Empty(t, status)
		}
	}
}

// A second OPEN refund request of a report that has one open, both at
// once: neither is refused nor lost; the report takes one, the other is
// kept by its own id (another_request), counted for on-call.
func TestASecondRequestAndTheTakeAtOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for range 4 {
		_, r := f.agreed(10_000, 0)
		before, err := f.store.Open(ctx, time.Hour)
		require.NoError(t, err)
		reqs := []dict.Refund{request(r, 10_000, dict.RefundOpen), request(r, 4_000, dict.RefundOpen)}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range reqs {
			wg.Add(1)
			go func() { defer wg.Done(); _, _, errs[i] = f.store.IntakeRefund(ctx, reqs[i]) }()
		}
		wg.Wait()
		require.NoError(t, errs[0])
		require.NoError(t, errs[1])

		got, err := f.store.Get(ctx, r.ID)
		require.NoError(t, err)
		require.True(t, got.RequestOpen())
		taken, other := reqs[0], reqs[1]
		if got.RefundRequestID.String() == other.ID {
			taken, other = other, taken
		}
		require.Equal(t, taken.ID, got.RefundRequestID.String())
		require.EqualValues(t, taken.RefundAmount, *got.RefundRequestCents)
		status, why := f.keptStatus(other.ID)
		require.Equal(t, [2]string{"OPEN", "another_request"}, [2]string{status, why})
		after, err := f.store.Open(ctx, time.Hour)
		require.NoError(t, err)
		require.Equal(t, before.Unanswered+1, after.Unanswered, "paged: PixMEDRefundRequestNotTaken")
	}
}

// A refund request its report took before its close (the DICT's notice
// first) and still OPEN when the report ends without returning it, closed
// DISAGREED or cancelled by its reporter, is never left behind on the
// ended report: kept by its own id with why, counted for on-call while
// OPEN at the DICT, and it follows the DICT's later moves there.
func TestARequestTakenBeforeAnEndThatReturnsNothingIsKept(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, r := f.held(10_000, 0)
	before, err := f.store.Open(ctx, time.Hour)
	require.NoError(t, err)
	req := request(r, 10_000, dict.RefundOpen)
	req.LastModified = time.Now().Add(-time.Minute)
	r = f.step(f.store.IntakeRefund(ctx, req))
	require.Equal(t, req.ID, r.RefundRequestID.String(), "taken before the close")
	f.step(f.store.Analyse(ctx, r.ID, dict.Disagreed, "", "operator-1"))
	r, err = f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	r = f.step(f.store.Closed(ctx, r, dict.InfractionReport{}))
	require.Equal(t, med.StatusEnded, r.Status)
	require.Nil(t, r.RefundRequestID, "not left OPEN on the ended report")
	status, why := f.keptStatus(req.ID)
	require.Equal(t, [2]string{"OPEN", "report_disagreed"}, [2]string{status, why})
	after, err := f.store.Open(ctx, time.Hour)
	require.NoError(t, err)
	require.Equal(t, before.Unanswered+1, after.Unanswered, "paged: PixMEDRefundRequestNotTaken")

	// The DICT's cancel of it (or on-call's REJECTED close, listed) is
	// followed where it is kept: the page clears.
	req.Status, req.LastModified = dict.RefundCancelled, req.LastModified.Add(30*time.Second)
	_, _, err = f.store.IntakeRefund(ctx, req)
	require.NoError(t, err)
	status, _ = f.keptStatus(req.ID)
	require.Equal(t, "CANCELLED", status)
	after, err = f.store.Open(ctx, time.Hour)
	require.NoError(t, err)
	require.Equal(t, before.Unanswered, after.Unanswered)

	// Agreed, its request taken, then cancelled by its reporter.
	_, agreed := f.agreed(10_000, 0)
	req = request(agreed, 10_000, dict.RefundOpen)
	agreed = f.step(f.store.IntakeRefund(ctx, req))
	in := report(agreed.EndToEndID, dict.ReportCancelled, time.Now())
	in.ID = agreed.ID.String()
	agreed, _, err = doorsOf(f.store).Intake(ctx, in)
	require.NoError(t, err)
	agreed = f.step(f.store.Cancel(ctx, agreed))
	require.Equal(t, med.EndCancelled, *agreed.EndCause)
	require.Nil(t, agreed.RefundRequestID)
	status, why = f.keptStatus(req.ID)
	require.Equal(t, [2]string{"OPEN", "report_cancelled"}, [2]string{status, why})
	f.requireBooks()
}

// The close DISAGREED and a refund request at once: whichever the report's
// lock serves first, the request ends kept by its own id, OPEN, counted
// for on-call, never on the ended report.
func TestACloseDisagreedAndARequestAtOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for range 6 {
		_, r := f.held(10_000, 0)
		f.step(f.store.Analyse(ctx, r.ID, dict.Disagreed, "", "operator-1"))
		r, err := f.store.Get(ctx, r.ID)
		require.NoError(t, err)
		req := request(r, 10_000, dict.RefundOpen)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		wg.Add(2)
		go func() { defer wg.Done(); _, _, errs[0] = f.store.Closed(ctx, r, dict.InfractionReport{}) }()
		go func() { defer wg.Done(); _, _, errs[1] = f.store.IntakeRefund(ctx, req) }()
		wg.Wait()
		require.NoError(t, errs[0])
		require.NoError(t, errs[1])
		if got, err := f.store.Get(ctx, r.ID); err == nil && got.Status != med.StatusEnded {
			// The request took the lock first: the close was decided on
			// an older generation; the run decides again.
			_, _, err = f.store.Closed(ctx, got, dict.InfractionReport{})
			require.NoError(t, err)
		}
		got, err := f.store.Get(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, med.StatusEnded, got.Status)
		require.Nil(t, got.RefundRequestID)
		status, _ := f.keptStatus(req.ID)
		require.Equal(t, "OPEN", status)
	}
}

// A copy of a refund request kept on its own under one report, naming
// another report of the same PIX (a copy the DICT never sent as such, or
// a mistake of the requester's), changes nothing of the kept row: it is
// decided under the other report's lock, not the one it is kept under.
func TestACopyNamingAnotherReportOfThePIXLeavesAKeptRequestAlone(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.agreed(10_000, 0)
	r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	second := request(r, 4_000, dict.RefundOpen)
	second.LastModified = time.Now().Add(-time.Minute)
	_, _, err := f.store.IntakeRefund(ctx, second)
	require.NoError(t, err)
	status, why := f.keptStatus(second.ID)
	require.Equal(t, [2]string{"OPEN", "another_request"}, [2]string{status, why})

	other := f.intake(report(c.EndToEndID, dict.ReportCancelled, time.Now().Add(-time.Hour)))
	require.NotEqual(t, r.ID, other.ID)
	require.Equal(t, med.StatusEnded, other.Status)
	elsewhere := second
	elsewhere.InfractionReportID, elsewhere.Status, elsewhere.LastModified = other.ID.String(), dict.RefundCancelled, time.Now()
	_, _, err = f.store.IntakeRefund(ctx, elsewhere)
	require.NoError(t, err)
	status, why = f.keptStatus(second.ID)
	require.Equal(t, [2]string{"OPEN", "another_request"}, [2]string{status, why}, "kept under report %s", r.ID)
}

// A refund request without its infraction report (OPERATIONAL_FLAW: the
// specification does not require one) is no MED request: its door refuses
// it for good (pix.IsRefusal), which the DICT's lister quarantines and
// walks past (TestAPoisonItemIsQuarantinedAndTheWindowMovesPastIt), never
// retried from the same cursor.
func TestARefundRequestWithoutItsReportIsRefusedForGood(t *testing.T) {
	f := newFixture(t)
	_, r := f.agreed(10_000, 0)
	in := request(r, 1_000, dict.RefundOpen)
	in.InfractionReportID, in.RefundReason, in.LastModified = "", dict.RefundReason("OPERATIONAL_FLAW"), time.Now()
	_, _, err := f.store.IntakeRefund(context.Background(), in)
	require.Error(t, err)
	require.True(t, pix.IsRefusal(err), "%v", err)
}
