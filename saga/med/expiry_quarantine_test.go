package med_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/med"
)

// requireStoppedHeld asserts the expiry stopped visibly (StoppedType,
// dict_problem noted) with the report's hold kept, not released.
func requireStoppedHeld(t *testing.T, a *activityRun, r med.Report, err error) {
	t.Helper()
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app) && app.Type() == med.StoppedType, "stopped: %v", err)
	cur := a.current(r)
	require.NotEqual(t, med.StatusEnded, cur.Status, "released (end cause %v)", derefS(cur.EndCause))
	require.NotNil(t, cur.HoldID, "the hold kept")
	require.NotNil(t, cur.DICTProblem, "the stop is visible")
	require.Contains(t, *cur.DICTProblem, med.ProblemNotAsOurs)
}

// closedAgreed is a report analysed AGREED and closed at the DICT, its
// refund request awaited, with the activities that closed it.
func closedAgreed(t *testing.T, f *fixture) (*activityRun, med.Report) {
	a, r := analysed(t, f, dict.Agreed)
	r, err := a.run(a.acts.CloseReport, r)
	require.NoError(t, err)
	return a, a.current(r)
}

// coveredPast puts the expiry at the instant the DICT's lister covers
// due past (ExpiryCovered), its cover there.
func coveredPast(a *activityRun, due time.Time) {
	a.acts.Store = a.f.store.WithClock(func() time.Time { return due.Add(med.ExpiryCovered) })
	a.acts.Covered = coveredAt{until: due.Add(med.ExpiryCovered)}
}

func derefS(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// requestOfAnotherPIX makes the DICT list a refund request, open, that
// names r with another PIX, and returns it: the door refuses its take-in
// for good (med_report_mismatch, quarantined).
func requestOfAnotherPIX(a *activityRun, r med.Report) dict.Refund {
	other := request(r, 10_000, dict.RefundOpen)
	other.TransactionID = pix.NewEndToEndID("99999010", time.Now())
	other.LastModified = time.Now()
	a.dict.refunds[other.ID] = other
	return other
}

// coveredAfterQuarantine is the lister committing between the expiry's
// reads: its ListDICTPart quarantines a malformed refund request of the
// report (OPEN at the DICT), then its AdvanceDICTList moves the covered
// window past the deadline. Read quarantine first, cover second, the
// expiry would see no quarantine and a cover past the deadline.
type coveredAfterQuarantine struct {
	until time.Time
	do    func()
}

func (c coveredAfterQuarantine) CoveredUntil(context.Context) (time.Time, bool, error) {
	c.do()
	return c.until, true, nil
}

// TestTheExpiryStopsOnWhatItCannotReadAsAbsent: a report agreed and
// closed (analysed, CloseReport) reaches its refund request deadline
// while a refund request of it may exist that could not be taken in: the
// expiry neither takes the lister's covered shortcut nor releases on a
// guess; it stops visibly, the hold kept (requireStoppedHeld).
func TestTheExpiryStopsOnWhatItCannotReadAsAbsent(t *testing.T) {
	for _, tc := range []struct {
		name string
		// at: the expiry's clock, past the deadline.
		at time.Duration
		// before sets the DICT, the quarantine and the lister's cover;
		// after goes on once the expiry stopped.
		before, after func(t *testing.T, f *fixture, a *activityRun, r med.Report, due time.Time)
	}{
		{
			// A refund request the lister quarantined as malformed (its
			// covered window moved past it) is not an absent one; until an
			// operator clears the quarantine. Cleared, it releases. (Attack
			// review r1 HIGH-1: released on the covered window before.)
			name: "a quarantined refund request", at: med.ExpiryCovered,
			before: func(t *testing.T, f *fixture, a *activityRun, r med.Report, due time.Time) {
				// The payer's PSP opens a refund request in time; the DICT
				// lists it with an amount our decoder can't read: the lister
				// quarantined it and covers past it (the DICT's walk hands it
				// as malformed).
				req := request(r, 10_000, dict.RefundOpen)
				req.LastModified = due.Add(-time.Hour)
				a.dict.malformedRefunds = []dict.MalformedItem{{Op: "listRefund", ID: req.ID, LastModified: req.LastModified,
					At: req.LastModified, Field: "RefundAmount"}}
				first, err := f.store.Quarantine(t.Context(), med.Quarantined{Kind: med.QuarantinedRefund, ID: req.ID,
					LastModified: req.LastModified, Reason: "dict_malformed:RefundAmount"})
				require.NoError(t, err)
				require.True(t, first)
				coveredPast(a, due)
			},
			after: func(t *testing.T, f *fixture, a *activityRun, r med.Report, _ time.Time) {
				// The operator decided it at the DICT and cleared it: released.
				req := a.dict.malformedRefunds[0]
				a.dict.malformedRefunds = nil
				_, err := f.store.ResolveQuarantined(t.Context(), med.QuarantinedRefund, req.ID, req.LastModified)
				require.NoError(t, err)
				out, err := a.run(a.acts.ExpireRequest, a.current(r))
				require.NoError(t, err)
				require.Equal(t, med.StatusEnded, out.Status)
				require.Equal(t, med.EndReleased, derefS(out.EndCause))
			},
		},
		{
			// Its LastModified could not be read (its row at where the walk
			// met it, maybe before the report's close): it may be any
			// report's: the expiry does not trust the lister's cover past
			// it, and its own listing, meeting it still OPEN and malformed,
			// stops on it.
			name: "an unplaced quarantined refund request", at: med.ExpiryCovered,
			before: func(t *testing.T, f *fixture, a *activityRun, r med.Report, due time.Time) {
				id, at := "5e0f9c1a-7a43-4c55-9d0e-3f1b2c3d4e5f", med.RequestsFrom(r).Add(-time.Hour)
				_, err := f.store.Quarantine(t.Context(), med.Quarantined{Kind: med.QuarantinedRefund, ID: id,
					LastModified: at, Reason: "dict_malformed:Status+LastModified"})
				require.NoError(t, err)
				a.dict.malformedRefunds = []dict.MalformedItem{{Op: "listRefund", ID: id, At: at, Field: "Status"}}
				coveredPast(a, due)
			},
		},
		{
			// The expiry's own listing meets a malformed refund request: it
			// quarantines it and stops, never a silent retry that waits for
			// the lister to cover the deadline past it.
			name: "a malformed request its own listing meets", at: med.ListLag + time.Second,
			before: func(_ *testing.T, _ *fixture, a *activityRun, _ med.Report, due time.Time) {
				a.dict.malformedRefunds = []dict.MalformedItem{{Op: "listRefund", ID: "7a0f9c1a-7a43-4c55-9d0e-3f1b2c3d4e5f",
					LastModified: due.Add(-time.Minute), At: due.Add(-time.Minute), Field: "RefundAmount"}}
			},
			after: func(t *testing.T, f *fixture, _ *activityRun, _ med.Report, _ time.Time) {
				items, err := f.store.QuarantinedItems(t.Context(), nil, 10)
				require.NoError(t, err)
				require.Len(t, items, 1)
				require.Equal(t, "7a0f9c1a-7a43-4c55-9d0e-3f1b2c3d4e5f", items[0].DICTID)
				require.Equal(t, "dict_malformed:RefundAmount", items[0].Reason)
			},
		},
		{
			// A take-in refused at its own listing (med_report_mismatch,
			// quarantined): when it tries again after ProblemRetryAfter,
			// the lister having covered the deadline, it stops again rather
			// than releasing on the covered window. (Attack review r1
			// HIGH-1b: the stop lasted 6 hours.)
			name: "a take-in refused at its own listing, then the lister's cover", at: med.ListLag + time.Second,
			before: func(_ *testing.T, _ *fixture, a *activityRun, r med.Report, _ time.Time) { requestOfAnotherPIX(a, r) },
			after: func(t *testing.T, f *fixture, a *activityRun, r med.Report, due time.Time) {
				// 6 h later (ProblemRetryAfter), the lister covers the deadline.
				later := due.Add(med.ProblemRetryAfter)
				a.acts.Store = f.store.WithClock(func() time.Time { return later })
				a.acts.Covered = coveredAt{until: later.Add(-time.Minute)}
				_, err := a.run(a.acts.ExpireRequest, a.current(r))
				requireStoppedHeld(t, a, r, err)
			},
		},
		{
			// The expiry reads the lister's cover before the quarantine, so
			// a quarantine the lister committed before advancing its cover
			// is seen (coveredAfterQuarantine). The request stays OPEN and
			// malformed at the DICT: the expiry's listing meets it (read
			// quarantine first, cover second, the expiry would not list at
			// all).
			name: "a quarantine committed with the cover", at: med.ExpiryCovered,
			before: func(t *testing.T, f *fixture, a *activityRun, _ med.Report, due time.Time) {
				id := "8b0f9c1a-7a43-4c55-9d0e-3f1b2c3d4e5f"
				a.dict.malformedRefunds = []dict.MalformedItem{{Op: "listRefund", ID: id, LastModified: due.Add(-time.Hour),
					At: due.Add(-time.Hour), Field: "RefundAmount"}}
				a.acts.Covered = coveredAfterQuarantine{until: due.Add(med.ExpiryCovered), do: func() {
					_, err := f.store.Quarantine(t.Context(), med.Quarantined{Kind: med.QuarantinedRefund, ID: id,
						LastModified: due.Add(-time.Hour), Reason: "dict_malformed:RefundAmount"})
					require.NoError(t, err)
				}}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			a, r := closedAgreed(t, f)
			due := *r.RequestDueAt
			tc.before(t, f, a, r, due)
			a.acts.Store = f.store.WithClock(func() time.Time { return due.Add(tc.at) })
			_, err := a.run(a.acts.ExpireRequest, a.current(r))
			requireStoppedHeld(t, a, r, err)
			if tc.after != nil {
				tc.after(t, f, a, r, due)
			}
		})
	}
}

// clearingDICT is the fake DICT whose listing, once the expiry has
// quarantined a malformed item (its Malformed callback returned), has an
// operator clear that copy (Store.ResolveQuarantined, the route's) before
// the walk ends: the operator alerted by the quarantine, the walk's other
// pages still to come.
type clearingDICT struct {
	*fakeDICT
	clear func(dict.MalformedItem)
}

func (d clearingDICT) WalkRefunds(ctx context.Context, q dict.RefundQuery, fn func(dict.Refund) error) (time.Time, error) {
	inner := q.Malformed
	q.Malformed = func(m dict.MalformedItem) error {
		err := inner(m)
		d.clear(m)
		return err
	}
	return d.fakeDICT.WalkRefunds(ctx, q, fn)
}

// A clear of the copy C the expiry's own listing quarantined, committed
// before the step's stop on C is recorded, found no stop to wake: the stop
// is not recorded (ErrStopCleared), the step is decided again at once,
// never stopped with no clear left to wake it before ProblemRetryAfter
// (attack review r7 LOW-1). Seen failing on the old code (stopped on C).
func TestAClearBetweenTheQuarantineAndTheStopDecidesTheStepAgain(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, r := closedAgreed(t, f)
	due := *r.RequestDueAt
	id := "7e0c6a0e-0000-4000-8000-000000000007"
	t2 := med.RequestsFrom(r).Add(time.Minute)
	a.dict.malformedRefunds = []dict.MalformedItem{{Op: "listRefund", ID: id, LastModified: t2, At: t2, Field: "RefundAmount"}}
	var woken []int
	a.acts.DICT = clearingDICT{fakeDICT: a.dict, clear: func(m dict.MalformedItem) {
		c, err := f.store.ResolveQuarantined(ctx, med.QuarantinedRefund, id, m.LastModified)
		require.NoError(t, err)
		require.Len(t, c.Rows, 1)
		woken = append(woken, len(c.Woken))
	}}
	a.acts.Store = f.store.WithClock(func() time.Time { return due.Add(med.ExpiryCovered) })
	a.acts.Covered = nil
	_, err := a.run(a.acts.ExpireRequest, a.current(r))
	require.Equal(t, []int{0}, woken, "the clear found no stop to wake")
	require.ErrorContains(t, err, med.ErrStopCleared.Error())
	var app *temporal.ApplicationError
	require.False(t, errors.As(err, &app) && app.Type() == med.StoppedType, "stopped on a copy cleared: %v", err)
	now := a.current(r)
	require.Nil(t, now.DICTProblem)
	require.Equal(t, r.Gen, now.Gen)

	a.acts.DICT = a.dict // no clear now: the step, decided again, stops on the copy the DICT still lists
	_, err = a.run(a.acts.ExpireRequest, a.current(r))
	requireStoppedHeld(t, a, r, err)
}
