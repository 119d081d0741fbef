package med_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
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
// reports on the same PIX is that report's (its InfractionReportId
// identifies the report of a fraud refund; the doors put it there, taken
// as its own or kept under it: answering another request, or ended): it
// holds back no release of this one, and the expiry decides so on both of
// its paths, the lister's cover (the doors put it under the other report)
// and its own listing (taken when a refund row is quarantined since the
// report's close, here an unrelated one). Attack review r6 LOW-1: the own
// listing stopped (dict_not_as_ours) on a request kept under the other
// report, the cover released.
func TestTheExpiryDecidesTheSameOnBothPathsOnAnotherReportsRequest(t *testing.T) {
	// other makes R2, another report of r's PIX, which takes (or keeps,
	// why) the refund request q that names it.
	for name, other := range map[string]func(t *testing.T, f *fixture, a *activityRun, r2 med.Report, in dict.InfractionReport) (why string){
		"taken as its own": func(*testing.T, *fixture, *activityRun, med.Report, dict.InfractionReport) string { return "" },
		"kept, it answers another": func(t *testing.T, f *fixture, a *activityRun, r2 med.Report, _ dict.InfractionReport) string {
			q0 := request(r2, 10_000, dict.RefundOpen)
			q0.LastModified = time.Now().Add(-time.Hour)
			a.dict.refunds[q0.ID] = q0
			_, changed, err := doorsOf(f.store).IntakeRefund(context.Background(), q0)
			require.NoError(t, err)
			require.True(t, changed)
			return "another_request"
		},
		"kept, it ended": func(t *testing.T, f *fixture, _ *activityRun, _ med.Report, in dict.InfractionReport) string {
			ctx := context.Background()
			in.Status, in.LastModified = dict.ReportCancelled, in.LastModified.Add(time.Minute) // its reporter's cancel
			r2, _, err := doorsOf(f.store).Intake(ctx, in)
			require.NoError(t, err)
			require.Equal(t, med.StatusEnded, f.step(f.store.Cancel(ctx, r2)).Status)
			return "report_ended"
		},
	} {
		for _, ownListing := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, own listing %v", name, ownListing), func(t *testing.T) {
				f := newFixture(t)
				ctx := context.Background()
				a, r := closedAgreed(t, f)
				in2 := report(r.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
				r2 := f.intake(in2)
				why := other(t, f, a, r2, in2)
				q := request(r2, 10_000, dict.RefundOpen)
				q.LastModified = med.RequestsFrom(r).Add(time.Minute)
				a.dict.refunds[q.ID] = q
				_, _, err := doorsOf(f.store).IntakeRefund(ctx, q) // the lister's
				require.NoError(t, err)
				requireRequestPlaced(t, f, q.ID, a.current(r2), why)
				if ownListing {
					_, err := f.store.Quarantine(ctx, med.Quarantined{Kind: med.QuarantinedRefund, ID: uuid.NewString(),
						LastModified: med.RequestsFrom(r).Add(time.Minute), Reason: "med_report_mismatch"})
					require.NoError(t, err)
				}
				coveredPast(a, *r.RequestDueAt)
				out, err := a.run(a.acts.ExpireRequest, a.current(r))
				require.NoError(t, err, "dict_problem: %s", derefS(a.current(r).DICTProblem))
				require.Equal(t, med.StatusEnded, out.Status)
				require.Equal(t, med.EndReleased, *out.EndCause)
				require.Equal(t, ownListing, slices.Contains(a.dict.ops, "listRefund"), "the path: listed %v", a.dict.ops)
			})
		}
	}
}

// requireRequestPlaced asserts the doors put the refund request id under
// r2: taken as its own (why ""), or kept under it for why.
func requireRequestPlaced(t *testing.T, f *fixture, id string, r2 med.Report, why string) {
	t.Helper()
	if why == "" {
		require.NotNil(t, r2.RefundRequestID)
		require.Equal(t, id, r2.RefundRequestID.String())
		return
	}
	var report uuid.UUID
	var kept string
	require.NoError(t, f.s.Pool().QueryRow(context.Background(),
		`SELECT report_id, why FROM pix_med_refund_requests WHERE id = $1`, id).Scan(&report, &kept))
	require.Equal(t, r2.ID, report)
	require.Equal(t, why, kept)
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

// With no lister's cover (MED_DICT_LIST_INTERVAL=0), the expiry's own
// listing meets a refund request Q on the report's PIX naming R2, another
// of our reports on it, that nothing took in: it puts Q through the doors
// (kept under R2, answering another request; or taken as R2's own, R2's
// run woken) and releases on that placement. Attack review r7: it
// released on a placement nobody made, Q recorded nowhere (no kept row,
// no page, never closed when R2 ends). Seen failing on 04e6d40's code.
func TestTheExpirysOwnListingPutsAnotherReportsRequestThroughTheDoors(t *testing.T) {
	for name, answering := range map[string]bool{"kept, it answers another": true, "taken as its own": false} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			a, r := closedAgreed(t, f)
			in2 := report(r.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
			r2 := f.intake(in2)
			why := ""
			if answering {
				q0 := request(r2, 10_000, dict.RefundOpen)
				q0.LastModified = time.Now().Add(-time.Hour)
				a.dict.refunds[q0.ID] = q0
				_, changed, err := doorsOf(f.store).IntakeRefund(ctx, q0)
				require.NoError(t, err)
				require.True(t, changed)
				why = "another_request"
			}
			q := request(a.current(r2), 10_000, dict.RefundOpen) // never taken in: no lister
			q.LastModified = med.RequestsFrom(r).Add(time.Minute)
			a.dict.refunds[q.ID] = q

			due := *r.RequestDueAt
			a.acts.Store = f.store.WithClock(func() time.Time { return due.Add(med.ExpiryCovered) })
			a.acts.Covered = nil
			sig := &sagatest.Signals{}
			a.acts.Doors = &med.Doors{Store: a.acts.Store, Temporal: sig, Log: sagatest.Discard()}
			out, err := a.run(a.acts.ExpireRequest, a.current(r))
			require.NoError(t, err, "dict_problem: %s", derefS(a.current(r).DICTProblem))
			require.Equal(t, med.EndReleased, *out.EndCause)
			requireRequestPlaced(t, f, q.ID, a.current(r2), why)
			if answering {
				require.Empty(t, sig.Sent(), "R2 unchanged: nothing to wake")
			} else {
				require.Equal(t, []string{med.WorkflowID(r2.ID.String()) + " " + med.ChangedSignal}, sig.Sent(), "R2 took Q: its run woken")
			}
		})
	}
}
