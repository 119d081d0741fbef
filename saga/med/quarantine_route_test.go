package med_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// An item quarantined with an id the DICT wrote with a '/' in it (no uuid:
// listed quoted, "a/b") is cleared by its dict_id as listed, sent
// percent-encoded (%2F, as pixctl med quarantine clear sends it) or not:
// the route takes the rest of the path as the id. Before, the route's id
// was one segment, and such an item answered 404 (no route) whatever the
// operator sent: it could not be cleared. A customer's token is refused
// (403) on it as on every operator route.
func TestAQuarantinedIDWithASlashIsCleared(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, _ := f.operatorAPI(&sagatest.Signals{})
	at := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	for _, id := range []string{"a/b", "x/../y/"} {
		_, err := f.store.Quarantine(ctx, med.Quarantined{Kind: med.QuarantinedRefund, ID: id, LastModified: at, Reason: "dict_malformed:Id"})
		require.NoError(t, err)
	}
	items, err := f.store.QuarantinedItems(ctx, nil, 10)
	require.NoError(t, err)
	require.Len(t, items, 2)

	through := "?through=" + url.QueryEscape(at.Format(time.RFC3339Nano))
	status, got := a.Call(http.MethodDelete, "/pix/med/quarantine/refund/"+url.PathEscape(`"a/b"`)+through, "customer", "", nil)
	require.Equal(t, http.StatusForbidden, status, "%v", got)
	require.Equal(t, "insufficient_scope", sagatest.Code(got))

	status, got = a.Call(http.MethodDelete, "/pix/med/quarantine/refund/"+url.PathEscape(`"a/b"`)+through, "ops", "", nil)
	require.Equal(t, http.StatusOK, status, "escaped: %v", got)
	require.Equal(t, `"a/b"`, got["dict_id"])
	require.Len(t, got["cleared"], 1)
	status, got = a.Call(http.MethodDelete, "/pix/med/quarantine/refund/"+url.PathEscape(`"a/b"`)+through, "ops", "", nil)
	require.Equal(t, http.StatusNotFound, status, "%v", got)
	require.Equal(t, "med_quarantine_not_found", sagatest.Code(got))

	status, got = a.Call(http.MethodDelete, "/pix/med/quarantine/refund/"+url.PathEscape(`"x/../y/"`)+through, "ops", "", nil)
	require.Equal(t, http.StatusOK, status, "a dot segment and a trailing slash: %v", got)
	require.Equal(t, `"x/../y/"`, got["dict_id"])

	status, got = a.Call(http.MethodDelete, "/pix/med/quarantine/refund/"+through, "ops", "", nil)
	require.Equal(t, http.StatusBadRequest, status, "no id: %v", got)
	items, err = f.store.QuarantinedItems(ctx, nil, 10)
	require.NoError(t, err)
	require.Empty(t, items)
}

// stoppedOnAQuarantinedRequest is a report whose expiry stopped at the
// DICT on a refund request its own listing met naming it with another PIX
// (the door refuses it: quarantined, dict_not_as_ours), the request, and
// the report as the stop left it.
func stoppedOnAQuarantinedRequest(t *testing.T, f *fixture) (*activityRun, med.Report, string) {
	a, r := closedAgreed(t, f)
	due := *r.RequestDueAt
	id := requestOfAnotherPIX(a, r).ID
	a.acts.Store = f.store.WithClock(func() time.Time { return due.Add(med.ListLag + time.Second) })
	_, err := a.run(a.acts.ExpireRequest, a.current(r))
	requireStoppedHeld(t, a, r, err)
	return a, a.current(r), id
}

// copies are the LastModified of the quarantined copies of id.
func copies(t *testing.T, f *fixture, id string) []time.Time {
	items, err := f.store.QuarantinedItems(t.Context(), nil, 100)
	require.NoError(t, err)
	var out []time.Time
	for _, q := range items {
		if q.DICTID == id {
			out = append(out, q.DICTModifiedAt)
		}
	}
	return out
}

// An operator's clear of the quarantined copy a run stopped on (its
// dict_problem names it) wakes that run: its report's generation bumped in
// the clear's transaction (the run's stopped wait ends on it, even if the
// signal is lost) and its run signalled after the commit. Before, the clear
// left the run stopped until its own retry time (ProblemRetryAfter, 6 h),
// although what stopped it was gone (LOW-2).
func TestAnOperatorsClearWakesTheRunStoppedOnIt(t *testing.T) {
	f := newFixture(t)
	a, r, id := stoppedOnAQuarantinedRequest(t, f)
	at := copies(t, f, id)
	require.Len(t, at, 1)
	signals := &sagatest.Signals{}
	calls := f.routes(signals, api.Deps{Keys: operatorKeys}, sagatest.Callers{"ops": sagatest.Operator("ops-1")})

	status, got := calls.Call(http.MethodDelete, "/pix/med/quarantine/refund/"+url.PathEscape(id)+
		"?through="+url.QueryEscape(at[0].Format(time.RFC3339Nano)), "ops", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", got)
	require.Equal(t, r.Gen+1, a.current(r).Gen, "the report's generation, which ends the run's stopped wait")
	require.Equal(t, []string{med.WorkflowID(r.ID.String()) + " " + med.ChangedSignal}, signals.Sent())
}

// The lister's clear (Doors.ClearQuarantined, a copy taken in) wakes only
// the run stopped on a copy it cleared: a run that stopped on a copy, then
// again on a newer one of the same item (the same problem's text), is not
// woken by the clear of the older copy (a lister late with it), only by the
// newer one's; a report that moved since its stop is not bumped again.
func TestAClearWakesOnlyTheRunStoppedOnTheCopyCleared(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	a, r, id := stoppedOnAQuarantinedRequest(t, f)
	req := a.dict.refunds[id]
	req.LastModified = req.LastModified.Add(time.Second)
	a.dict.refunds[id] = req
	_, err := a.run(a.acts.ExpireRequest, r)
	requireStoppedHeld(t, a, r, err)
	require.Equal(t, r.Gen, a.current(r).Gen, "the same problem noted again: not a change")
	at := copies(t, f, id)
	require.Len(t, at, 2)

	signals := &sagatest.Signals{}
	doors := &med.Doors{Store: f.store, Temporal: signals, Log: sagatest.Discard()}
	cleared, err := doors.ClearQuarantined(ctx, med.QuarantinedRefund, id, at[0])
	require.NoError(t, err)
	require.EqualValues(t, 1, cleared)
	require.Equal(t, r.Gen, a.current(r).Gen, "stopped on the newer copy: not woken by the older one's clear")
	require.Empty(t, signals.Sent())

	cleared, err = doors.ClearQuarantined(ctx, med.QuarantinedRefund, id, at[1])
	require.NoError(t, err)
	require.EqualValues(t, 1, cleared)
	require.Equal(t, r.Gen+1, a.current(r).Gen)
	require.Equal(t, []string{med.WorkflowID(r.ID.String()) + " " + med.ChangedSignal}, signals.Sent())

	// Woken, it tries again and stops again on the newer copy (the DICT
	// still lists it so); the report moves on before its quarantine is
	// cleared: the clear bumps nothing, signals nothing.
	_, err = a.run(a.acts.ExpireRequest, a.current(r))
	requireStoppedHeld(t, a, r, err)
	moved, _, err := f.store.NoteProblem(ctx, a.current(r), "dict_refused: another stop")
	require.NoError(t, err)
	_, err = f.store.ResolveQuarantined(ctx, med.QuarantinedRefund, id, at[1])
	require.NoError(t, err)
	require.Equal(t, moved.Gen, a.current(r).Gen)
	require.Len(t, signals.Sent(), 1)
}
