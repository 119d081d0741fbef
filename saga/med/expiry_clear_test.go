package med_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// An operator's clear is fenced by the copy they decided: the operator
// lists the quarantine and decides the copy of an item modified at T1;
// the DICT modifies the item since (now this report's refund request,
// OPEN, still not the specification's) and the lister quarantines that
// copy (T2) and covers past it. A clear without the LastModified decided
// is refused (it cleared every copy, T2 too, and the expiry then released
// on the lister's cover without listing the DICT), and so is one of a
// LastModified no copy has; the clear of T1 leaves T2 (and a copy whose
// LastModified could not be read, which may be newer), so the expiry
// lists the DICT, meets T2 and stops, the hold kept. (Attack review r4
// MED-1.)
func TestAnOperatorsClearLeavesTheCopiesQuarantinedSinceAndTheExpiryStops(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, r := closedAgreed(t, f)
	cur := a.current(r)
	due := *cur.RequestDueAt
	from := med.RequestsFrom(cur)
	ops := f.routes(&sagatest.Signals{}, api.Deps{Keys: operatorKeys}, sagatest.Callers{"ops": sagatest.Operator("ops-1")})

	id := uuid.NewString()
	t1 := from.Add(-2 * time.Hour) // the copy the operator read and decided: not this report's
	t0 := t1.Add(-time.Hour)       // a copy met with no LastModified readable: at or after t0
	t2 := due.Add(-time.Hour)      // the copy quarantined since: this report's, OPEN
	for _, q := range []med.Quarantined{
		{Kind: med.QuarantinedRefund, ID: id, LastModified: t0, Reason: "dict_malformed:Status+LastModified"},
		{Kind: med.QuarantinedRefund, ID: id, LastModified: t1, Reason: "dict_malformed:RefundAmount"},
		{Kind: med.QuarantinedRefund, ID: id, LastModified: t2, Reason: "dict_malformed:RefundAmount"},
	} {
		_, err := f.store.Quarantine(ctx, q)
		require.NoError(t, err)
	}
	a.dict.malformedRefunds = []dict.MalformedItem{{Op: "listRefund", ID: id, LastModified: t2, At: t2, Field: "RefundAmount"}}
	path := "/pix/med/quarantine/refund/" + id

	status, got := ops.Call(http.MethodDelete, path, "ops", "", nil)
	require.Equal(t, http.StatusBadRequest, status, "a clear without the copy decided: %v", got)
	require.Equal(t, "invalid_request", sagatest.Code(got))
	status, got = ops.Call(http.MethodDelete, path+"?through="+time.Now().UTC().Format(time.RFC3339Nano), "ops", "", nil)
	require.Equal(t, http.StatusNotFound, status, "a LastModified no copy has: %v", got)
	require.Equal(t, "med_quarantine_not_found", sagatest.Code(got))
	items, err := f.store.QuarantinedItems(ctx, nil, 10)
	require.NoError(t, err)
	require.Len(t, items, 3, "nothing cleared")

	status, got = ops.Call(http.MethodDelete, path+"?through="+t1.Format(time.RFC3339Nano), "ops", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", got)
	require.Equal(t, []any{t1.Format(time.RFC3339Nano)}, got["cleared"], "the copy decided only")
	items, err = f.store.QuarantinedItems(ctx, nil, 10)
	require.NoError(t, err)
	require.Len(t, items, 2)
	require.True(t, items[0].DICTModifiedAt.Equal(t0), "the unplaced copy stays: %v", items[0])
	require.True(t, items[1].DICTModifiedAt.Equal(t2), "the copy quarantined since stays: %v", items[1])

	coveredPast(a, due)
	_, err = a.run(a.acts.ExpireRequest, a.current(r))
	requireStoppedHeld(t, a, r, err)
	require.Contains(t, a.dict.ops, "listRefund", "the DICT listed, not the lister's cover trusted")

	// The unplaced copy is cleared when named.
	cleared, err := f.store.ResolveQuarantined(ctx, med.QuarantinedRefund, id, t0)
	require.NoError(t, err)
	require.Len(t, cleared.Rows, 1)
}

// A refund request of another report quarantined by the lister (the
// doors refused it: med_report_mismatch) makes this report's expiry list
// the DICT rather than trust the lister's cover, and that listing of
// every OPEN request modified since the close settles it: it names
// another report, no OPEN request names this one, none is malformed, so
// the report is released at its 72 hours, as it is past a quarantined
// request the DICT no longer lists OPEN. Only what the listing itself
// meets not the specification's stops it (TestTheExpiryDoesNotRelease...).
// (Attack review r4 MED-2: any refund row in quarantine stopped every
// report's expiry until an operator cleared it.)
func TestAnotherReportsQuarantinedRequestDoesNotHoldBackTheExpiry(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, r := closedAgreed(t, f)
	due := *r.RequestDueAt
	from := med.RequestsFrom(a.current(r))

	other := dict.Refund{ID: uuid.NewString(), TransactionID: "E9999999920260101000000000000001", RefundReason: dict.RefundFraud,
		RefundAmount: dict.Amount(500), Status: dict.RefundOpen, InfractionReportID: uuid.NewString(),
		LastModified: from.Add(time.Minute)}
	a.dict.refunds[other.ID] = other
	for _, q := range []med.Quarantined{
		{Kind: med.QuarantinedRefund, ID: other.ID, LastModified: other.LastModified, Reason: "med_report_mismatch"},
		// Quarantined malformed, since CLOSED at the DICT: not listed OPEN.
		{Kind: med.QuarantinedRefund, ID: uuid.NewString(), LastModified: from.Add(2 * time.Minute), Reason: "dict_malformed:RefundAmount"},
	} {
		_, err := f.store.Quarantine(ctx, q)
		require.NoError(t, err)
	}

	coveredPast(a, due)
	out, err := a.run(a.acts.ExpireRequest, a.current(r))
	require.NoError(t, err, "the DICT's listing says no request of this report is OPEN")
	require.Equal(t, med.StatusEnded, out.Status)
	require.Equal(t, med.EndReleased, derefS(out.EndCause))
	require.Contains(t, a.dict.ops, "listRefund", "listed, the quarantine not trusted to the lister's cover")
	require.True(t, a.dict.refundQuery.ModifiedAfter.Equal(from), "listed from the report's close: %s", a.dict.refundQuery.ModifiedAfter)
	items, err := f.store.QuarantinedItems(ctx, nil, 10)
	require.NoError(t, err)
	require.Len(t, items, 2, "the rows stay the operator's (PixMEDDICTItemQuarantined)")
}
