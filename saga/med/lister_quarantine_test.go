package med_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beevik/etree"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/tooling/dictsim"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// spoilListed makes the simulator's lists carry the item (an element
// named item) whose Id is id changed as change says, signed by the DICT
// all the same (not checked against the document: it breaks it on
// purpose); nil change lists it as it is again.
func (f *listerFixture) spoilListed(item, id string, change func(*etree.Element)) {
	if change == nil {
		f.ts.SetAnswerHook(nil)
		return
	}
	f.ts.SetAnswerHook(func(x *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer {
		a := model()
		if x.Op != "listInfractionReport" && x.Op != "listRefund" {
			return a
		}
		for _, e := range a.Body.FindElements("//" + item) {
			if el := e.SelectElement("Id"); el != nil && el.Text() == id {
				change(e)
				a.Unchecked = true
			}
		}
		return a
	})
}

// refundOpened closes rep AGREED at the DICT and opens its refund
// request there (R$ 50,00), past whose millisecond it returns (as open).
func (f *listerFixture) refundOpened(rep dict.InfractionReport) dict.Refund {
	f.t.Helper()
	ctx := context.Background()
	_, err := f.client.AcknowledgeInfractionReport(ctx, rep.ID)
	require.NoError(f.t, err)
	_, err = f.client.CloseInfractionReport(ctx, rep.ID, dict.Agreed, "")
	require.NoError(f.t, err)
	ref, err := f.ts.OpenRefund(dictsim.NewRefund{InfractionReportID: rep.ID, Amount: 5_000})
	require.NoError(f.t, err)
	time.Sleep(time.Until(ref.LastModified.Add(time.Millisecond)))
	return ref
}

type quarantineRow struct {
	Kind, ID, Reason string
	Modified         time.Time
}

func (f *listerFixture) quarantined() []quarantineRow {
	f.t.Helper()
	rows, err := f.s.Pool().Query(context.Background(), "SELECT kind, dict_id, reason, dict_modified_at FROM pix_med_quarantine ORDER BY kind, dict_id, dict_modified_at")
	require.NoError(f.t, err)
	var out []quarantineRow
	for rows.Next() {
		var r quarantineRow
		require.NoError(f.t, rows.Scan(&r.Kind, &r.ID, &r.Reason, &r.Modified))
		r.Modified = r.Modified.UTC()
		out = append(out, r)
	}
	require.NoError(f.t, rows.Err())
	return out
}

// An item of a verified page that is not the specification's (a report's
// Status the specification does not have, a refund request's amount that
// can't be read) is quarantined in its place, its id, LastModified and the
// element at fault recorded, counted, and the gauge behind
// PixMEDDICTItemQuarantined reads it; the walk goes on, the items after it
// taken in and the window covered past it. (Before, the page failed whole:
// the lister stalled on it, every later report waiting.) Listed again as
// it was (the overlap), it is the same row. Once the DICT lists it right
// (our code fixed, or the DICT), the next listing takes it in and clears
// its quarantine; the gauge reads none and the alert stops.
func TestAMalformedItemIsQuarantinedUntilAListingTakesItIn(t *testing.T) {
	f := newListerFixture(t, dictsim.Options{})
	ctx := context.Background()
	env := saga.Env{Store: f.s, Log: sagatest.Discard(), Process: saga.NewProcess()}
	reg := sagatest.Registry(t, med.Saga.Collectors(env))
	counted := med.QuarantinedItems.WithLabelValues(med.QuarantinedReport)
	before := testutil.ToFloat64(counted)
	r1, bad, r3 := f.open(), f.open(), f.open()
	f.spoilListed("InfractionReport", bad.ID, func(e *etree.Element) { e.SelectElement("Status").SetText("SUSPENDED") })
	until, err := f.run()
	require.NoError(t, err, "a malformed item fails no run")
	require.False(t, until.Before(r3.LastModified.Truncate(time.Microsecond)), "covered past the malformed item: %s", until)
	_, err = f.run() // the overlap lists it again
	require.NoError(t, err)
	require.Equal(t, map[string]int{r1.ID: 1, r3.ID: 1}, f.doors.changed)
	require.Equal(t, []quarantineRow{{med.QuarantinedReport, bad.ID, "dict_malformed:Status", bad.LastModified.Truncate(time.Microsecond).UTC()}},
		f.quarantined())
	require.Equal(t, 1.0, testutil.ToFloat64(counted)-before, "counted once, though listed twice")
	require.Equal(t, 1.0, sagatest.Value(t, reg, "pix_med_dict_items_quarantined", "kind", med.QuarantinedReport))
	require.Zero(t, sagatest.Value(t, reg, "pix_med_dict_items_quarantined", "kind", med.QuarantinedRefund))

	f.spoilListed("", "", nil)
	_, err = f.run() // within the overlap: the same copy, listed right
	require.NoError(t, err)
	require.Equal(t, 1, f.doors.changed[bad.ID], "taken in")
	got, err := f.store.Get(ctx, uuid.MustParse(bad.ID))
	require.NoError(t, err)
	require.Equal(t, med.StatusReceived, got.Status)
	require.Empty(t, f.quarantined(), "cleared by the listing that took it in")
	require.Zero(t, sagatest.Value(t, reg, "pix_med_dict_items_quarantined", "kind", med.QuarantinedReport), "the alert's gauge reads none")

	// A refund request whose amount can't be read: quarantined as a
	// refund; the DICT modifies it since (cancelled), listed right: taken
	// in, cleared.
	ref := f.refundOpened(r1)
	f.spoilListed("Refund", ref.ID, func(e *etree.Element) { e.SelectElement("RefundAmount").SetText("50.001") })
	_, err = f.run()
	require.NoError(t, err)
	require.Equal(t, []quarantineRow{{med.QuarantinedRefund, ref.ID, "dict_malformed:RefundAmount", ref.LastModified.Truncate(time.Microsecond).UTC()}},
		f.quarantined())
	require.Equal(t, 1.0, sagatest.Value(t, reg, "pix_med_dict_items_quarantined", "kind", med.QuarantinedRefund))
	f.spoilListed("", "", nil)
	cancelled, err := f.ts.CancelRefund(ref.ID)
	require.NoError(t, err)
	time.Sleep(time.Until(cancelled.LastModified.Add(time.Millisecond)))
	_, err = f.run()
	require.NoError(t, err)
	require.Empty(t, f.quarantined(), "the DICT's newer copy taken in clears the older one's quarantine")
}

// A malformed item whose LastModified can't be read is quarantined where
// the walk met it (the instant of the item before it, which it is at or
// after), never dropped; the items after it are taken in.
func TestAMalformedItemWithoutLastModifiedIsQuarantinedWhereMet(t *testing.T) {
	f := newListerFixture(t, dictsim.Options{})
	r1, bad, r3 := f.open(), f.open(), f.open()
	f.spoilListed("InfractionReport", bad.ID, func(e *etree.Element) { e.RemoveChild(e.SelectElement("LastModified")) })
	_, err := f.run()
	require.NoError(t, err)
	require.Equal(t, map[string]int{r1.ID: 1, r3.ID: 1}, f.doors.changed)
	rows := f.quarantined()
	require.Len(t, rows, 1)
	require.Equal(t, bad.ID, rows[0].ID)
	require.Equal(t, "dict_malformed:LastModified", rows[0].Reason)
	require.False(t, rows[0].Modified.After(bad.LastModified), "placed at or before the item: %s", rows[0].Modified)
	require.False(t, rows[0].Modified.Before(r1.LastModified.Truncate(time.Microsecond)), "placed after the item before it: %s", rows[0].Modified)
}

// TestWhatATakeInClearsOfTheQuarantine: the lister's take-in of a copy of
// an item clears (ClearQuarantined, through the copy's LastModified) the
// quarantine of that copy and of earlier ones only, of the item's kind;
// the rows left are checked after each clear.
func TestWhatATakeInClearsOfTheQuarantine(t *testing.T) {
	f := newFixture(t)
	t1 := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	t2 := t1.Add(time.Second)
	type clear struct {
		kind    string
		through time.Time
		cleared int64
		why     string
		left    []time.Time
	}
	for _, tc := range []struct {
		name string
		rows []med.Quarantined
		// clears, in order: what each clears, and the item's rows left.
		clears []clear
	}{
		{
			// A late clear (a lister that took in an older copy of an item)
			// never erases the quarantine of a newer copy.
			name: "a late clear leaves a newer quarantine",
			rows: []med.Quarantined{{Kind: med.QuarantinedReport, LastModified: t1, Reason: "dict_malformed:Status"},
				{Kind: med.QuarantinedReport, LastModified: t2, Reason: "med_report_mismatch"}},
			clears: []clear{
				{kind: med.QuarantinedReport, through: t1, cleared: 1, why: "the older copy's", left: []time.Time{t2}},
				{kind: med.QuarantinedRefund, through: t2, why: "another kind's clear", left: []time.Time{t2}},
				{kind: med.QuarantinedReport, through: t2, cleared: 1},
			},
		},
		// A malformed copy whose LastModified could not be read is recorded
		// where the walk met it, at or before its real instant: a late
		// ListDICTPart attempt takes in a good copy modified 1 s after,
		// read before the DICT's newer (malformed) one, and never clears
		// it: only an operator does. (Attack review r1 MED-2.)
		{
			name: "an unplaced quarantine (Status+LastModified) is not cleared by a take-in",
			rows: []med.Quarantined{{Kind: med.QuarantinedRefund, LastModified: t1, Reason: "dict_malformed:Status+LastModified"}},
			clears: []clear{{kind: med.QuarantinedRefund, through: t2, left: []time.Time{t1},
				why: "an unplaced quarantine cleared by a copy that may be older than it"}},
		},
		{
			name: "an unplaced quarantine (LastModified) is not cleared by a take-in",
			rows: []med.Quarantined{{Kind: med.QuarantinedRefund, LastModified: t1, Reason: "dict_malformed:LastModified"}},
			clears: []clear{{kind: med.QuarantinedRefund, through: t2, left: []time.Time{t1},
				why: "an unplaced quarantine cleared by a copy that may be older than it"}},
		},
		{
			name:   "a placed one is cleared by its copy",
			rows:   []med.Quarantined{{Kind: med.QuarantinedRefund, LastModified: t1, Reason: "dict_malformed:RefundAmount"}},
			clears: []clear{{kind: med.QuarantinedRefund, through: t1, cleared: 1}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			id := uuid.NewString()
			for _, q := range tc.rows {
				q.ID = id
				first, err := f.store.Quarantine(ctx, q)
				require.NoError(t, err)
				require.True(t, first, "a copy at a LastModified of its own")
			}
			for _, c := range tc.clears {
				cleared, err := f.store.ClearQuarantined(ctx, c.kind, id, c.through)
				require.NoError(t, err)
				require.Len(t, cleared.Rows, int(c.cleared), c.why)
				items, err := f.store.QuarantinedItems(ctx, nil, 100)
				require.NoError(t, err)
				var left []time.Time
				for _, q := range items {
					if q.DICTID == id {
						left = append(left, q.DICTModifiedAt)
					}
				}
				require.Len(t, left, len(c.left), c.why)
				for i := range left {
					require.True(t, left[i].Equal(c.left[i]), "%s: %s left, not %s", c.why, left[i], c.left[i])
				}
			}
		})
	}
}

// The quarantine's operator routes: every quarantined item listed a page
// at a time (every one reached by the cursor); an operator's clear of an
// item decided by hand, through the LastModified of the copy decided (a
// copy quarantined after stays; none given, 400), 404 once that copy is
// gone; a customer's token refused (403) before anything.
func TestTheQuarantineRoutes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, _ := f.operatorAPI(&sagatest.Signals{})
	id := uuid.NewString()
	t1 := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	t2 := t1.Add(time.Second)
	for _, q := range []med.Quarantined{
		{Kind: med.QuarantinedReport, ID: id, LastModified: t1, Reason: "dict_malformed:Status"},
		{Kind: med.QuarantinedReport, ID: id, LastModified: t2, Reason: "dict_malformed:Status"},
		{Kind: med.QuarantinedRefund, ID: "", LastModified: t1, Reason: "dict_malformed:Id"},
	} {
		_, err := f.store.Quarantine(ctx, q)
		require.NoError(t, err)
	}

	var seen []string
	for _, q := range listPages(t, a, "/pix/med/quarantine", "items", 10) {
		seen = append(seen, q["kind"].(string)+" "+q["dict_id"].(string)+" "+q["dict_modified_at"].(string)+" "+q["reason"].(string))
	}
	require.Equal(t, []string{
		"refund \"\" " + t1.Format(time.RFC3339Nano) + " dict_malformed:Id",
		"report " + id + " " + t1.Format(time.RFC3339Nano) + " dict_malformed:Status",
		"report " + id + " " + t2.Format(time.RFC3339Nano) + " dict_malformed:Status",
	}, seen)

	status, got := a.Call(http.MethodDelete, "/pix/med/quarantine/report/"+id+"?through="+t1.Format(time.RFC3339Nano), "ops", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", got)
	require.Len(t, got["cleared"], 1, "through t1: the newer copy stays")
	items, err := f.store.QuarantinedItems(ctx, nil, 10)
	require.NoError(t, err)
	require.Len(t, items, 2)
	at1, at2 := "?through="+t1.Format(time.RFC3339Nano), "?through="+t2.Format(time.RFC3339Nano)
	status, got = a.Call(http.MethodDelete, "/pix/med/quarantine/report/"+id+at2, "ops", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", got)
	require.Len(t, got["cleared"], 1)
	status, got = a.Call(http.MethodDelete, "/pix/med/quarantine/report/"+id+at2, "ops", "", nil)
	require.Equal(t, http.StatusNotFound, status, "%v", got)
	require.Equal(t, "med_quarantine_not_found", sagatest.Code(got))
	status, got = a.Call(http.MethodDelete, "/pix/med/quarantine/report/"+url.PathEscape(`""`)+at1, "ops", "", nil)
	require.Equal(t, http.StatusNotFound, status, "another kind's: %v", got)
	status, got = a.Call(http.MethodDelete, "/pix/med/quarantine/refund/"+url.PathEscape(`""`)+at1, "ops", "", nil)
	require.Equal(t, http.StatusOK, status, "an item without an id, by its dict_id as listed: %v", got)
	status, got = a.Call(http.MethodDelete, "/pix/med/quarantine/block/"+id+at1, "ops", "", nil)
	require.Equal(t, http.StatusBadRequest, status, "%v", got)
	status, got = a.Call(http.MethodDelete, "/pix/med/quarantine/report/"+id+"?through=yesterday", "ops", "", nil)
	require.Equal(t, http.StatusBadRequest, status, "%v", got)
	status, got = a.Call(http.MethodDelete, "/pix/med/quarantine/report/"+id, "ops", "", nil)
	require.Equal(t, http.StatusBadRequest, status, "no copy decided: %v", got)

	// A uuid given in another case (or braces) is the one quarantined in
	// its canonical form (quarantinedID), as the lister records it.
	// (Attack review r1 LOW-c: not found before.)
	id2 := uuid.NewString()
	_, err = f.store.Quarantine(ctx, med.Quarantined{Kind: med.QuarantinedRefund, ID: id2, LastModified: t1, Reason: "dict_malformed:Status"})
	require.NoError(t, err)
	status, got = a.Call(http.MethodDelete, "/pix/med/quarantine/refund/"+strings.ToUpper(id2)+at1, "ops", "", nil)
	require.Equal(t, http.StatusOK, status, "a uuid in capitals: %v", got)
	require.Equal(t, id2, got["dict_id"])

	for _, call := range [][2]string{{http.MethodGet, "/pix/med/quarantine"}, {http.MethodDelete, "/pix/med/quarantine/report/" + id}} {
		status, refused := a.Call(call[0], call[1], "customer", "", nil)
		require.Equal(t, http.StatusForbidden, status, call[1])
		require.Equal(t, "insufficient_scope", sagatest.Code(refused))
	}
}

// A refund request whose report the lister has not taken in (not listed
// to it: here, hidden from its lists) is taken in after the report, read
// by GetInfractionReport; a report read that is not the specification's
// (its Status one no enumeration has) is no report to take the request
// on: the request is quarantined (dict_malformed:InfractionReport), the
// report not received, the walk goes on. Once the DICT answers the report
// right, the overlap's listing of the same request takes both in and
// clears the quarantine. (1e35cdd: the lister's quarantine of a
// malformed read, untested before.)
func TestARefundRequestWhoseReportReadsMalformedIsQuarantined(t *testing.T) {
	f := newListerFixture(t, dictsim.Options{})
	ctx := context.Background()
	rep := f.open()
	ref := f.refundOpened(rep)
	var malformed atomic.Bool
	malformed.Store(true)
	var reads atomic.Int32
	f.ts.SetAnswerHook(func(x *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer {
		a := model()
		switch x.Op {
		case "listInfractionReport":
			for _, e := range a.Body.FindElements("//InfractionReport") {
				if el := e.SelectElement("Id"); el != nil && el.Text() == rep.ID {
					e.Parent().RemoveChild(e)
				}
			}
		case "getInfractionReport":
			reads.Add(1)
			if st := a.Body.FindElement("//Status"); st != nil && malformed.Load() {
				st.SetText("SUSPENDED")
				a.Unchecked = true
			}
		}
		return a
	})

	_, err := f.run()
	require.NoError(t, err, "a malformed read fails no run")
	require.Positive(t, reads.Load(), "the report read, not listed")
	require.Equal(t, []quarantineRow{{med.QuarantinedRefund, ref.ID, "dict_malformed:InfractionReport", ref.LastModified.Truncate(time.Microsecond).UTC()}},
		f.quarantined())
	_, err = f.store.Get(ctx, uuid.MustParse(rep.ID))
	require.ErrorIs(t, err, med.ErrNotFound, "no report taken in on a read not the specification's")

	malformed.Store(false)
	_, err = f.run() // within the overlap: the same request, its report read right
	require.NoError(t, err)
	got, err := f.store.Get(ctx, uuid.MustParse(rep.ID))
	require.NoError(t, err)
	require.NotNil(t, got.RefundRequestID)
	require.Equal(t, ref.ID, got.RefundRequestID.String())
	require.Empty(t, f.quarantined(), "cleared by the listing that took it in")
}
