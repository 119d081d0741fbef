package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// A well-formed refund request OPEN at the DICT on the report's PIX
// (TransactionId its EndToEndId) that names no report (InfractionReportId
// is optional in a refund request) or a report we cannot tie to it (one we
// do not have) may be the report's request: the doors refused it and the
// lister quarantined it and covered past; the expiry's own listing meets
// it and stops the run visibly (dict_not_as_ours), the hold kept, never
// released on a guess.
func TestTheExpiryStopsOnAnOpenRequestOfItsPIXNotNamingIt(t *testing.T) {
	for name, c := range map[string]struct{ reportID, reason string }{
		"no report named":     {"", "invalid_request:infraction_report_id"},
		"an unknown report":   {uuid.NewString(), "dict_refused"},
		"no report id at all": {"not-a-uuid", "dict_refused"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			a, r := closedAgreed(t, f)
			req := openOnItsPIX(t, f, a, r, c.reportID, c.reason)
			coveredPast(a, *r.RequestDueAt)
			_, err := a.run(a.acts.ExpireRequest, a.current(r))
			requireStoppedHeld(t, a, r, err)
			require.Contains(t, *a.current(r).DICTProblem, req.ID)
		})
	}
}

// A refund request OPEN on the report's PIX that names another of our
// reports on the same PIX, which took it in as its own, is that report's:
// it holds back no release.
func TestTheExpiryReleasesPastARequestAnotherReportOfItsPIXTook(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, r := closedAgreed(t, f)
	other := f.intake(report(r.EndToEndID, dict.ReportOpen, time.Now()))
	req := openOnItsPIX(t, f, a, r, other.ID.String(), "dict_refused")
	tag, err := f.s.Pool().Exec(ctx, `UPDATE pix_med_reports SET refund_request_id = $2, refund_request_cents = 10000,
		refund_request_status = 'OPEN' WHERE id = $1`, other.ID, req.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())

	coveredPast(a, *r.RequestDueAt)
	out, err := a.run(a.acts.ExpireRequest, a.current(r))
	require.NoError(t, err)
	require.Equal(t, med.StatusEnded, out.Status)
	require.Equal(t, med.EndReleased, *out.EndCause)
}

// openOnItsPIX puts a refund request OPEN at the DICT on r's PIX naming
// reportID, modified since r's close, quarantined for reason (a row the
// expiry's listing decides past).
func openOnItsPIX(t *testing.T, f *fixture, a *activityRun, r med.Report, reportID, reason string) dict.Refund {
	t.Helper()
	req := request(r, 10_000, dict.RefundOpen)
	req.InfractionReportID = reportID
	req.LastModified = med.RequestsFrom(r).Add(time.Minute)
	a.dict.refunds[req.ID] = req
	_, err := f.store.Quarantine(context.Background(), med.Quarantined{Kind: med.QuarantinedRefund, ID: req.ID,
		LastModified: req.LastModified, Reason: reason})
	require.NoError(t, err)
	return req
}

// With a refund request quarantined since the report's close (another
// report's, say), the expiry lists the DICT itself; that listing decides
// only from the deadline plus ExpiryCovered (the lists' lag and the
// DICT's clock up to its skew behind ours), as the lister's cover would:
// before it, it is a "not yet" (retried), nothing released; from it,
// released. The store's fence holds every path to the same margin.
func TestTheExpirysOwnListingWaitsForTheDICTsClockSkew(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, r := closedAgreed(t, f)
	due := *r.RequestDueAt
	_, err := f.store.Quarantine(ctx, med.Quarantined{Kind: med.QuarantinedRefund, ID: uuid.NewString(),
		LastModified: med.RequestsFrom(r).Add(time.Minute), Reason: "med_report_mismatch"})
	require.NoError(t, err)
	for _, at := range []time.Time{due.Add(med.ListLag + time.Second), due.Add(med.ExpiryCovered - time.Second)} {
		a.acts.Store = f.store.WithClock(func() time.Time { return at })
		a.acts.Covered = coveredAt{until: at.Add(-time.Second)} // the lister live, a second behind
		out, err := a.run(a.acts.ExpireRequest, a.current(r))
		require.Error(t, err, "at due+%s: released before due+ExpiryCovered (%s): %v", at.Sub(due), med.ExpiryCovered, out.Status)
		require.Equal(t, med.StatusAwaitingRequest, a.current(r).Status)
		_, _, err = f.store.ExpireRequest(ctx, a.current(r), at)
		require.Error(t, err, "the store's fence at due+%s", at.Sub(due))
	}
	at := due.Add(med.ExpiryCovered)
	a.acts.Store = f.store.WithClock(func() time.Time { return at })
	a.acts.Covered = coveredAt{until: at.Add(-time.Second)}
	out, err := a.run(a.acts.ExpireRequest, a.current(r))
	require.NoError(t, err)
	require.Equal(t, med.EndReleased, *out.EndCause)
}
