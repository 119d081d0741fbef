package med_test

import (
	"context"
	"math"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/tooling/dictsim"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// smallPages is the DICT client whose walks ask pages of two: a few items
// make a list of many pages.
type smallPages struct{ *dict.HTTPClient }

func (d smallPages) WalkInfractionReports(ctx context.Context, q dict.ReportQuery, fn func(dict.InfractionReport) error) (time.Time, error) {
	q.Limit = 2
	return d.HTTPClient.WalkInfractionReports(ctx, q, fn)
}

func (d smallPages) WalkRefunds(ctx context.Context, q dict.RefundQuery, fn func(dict.Refund) error) (time.Time, error) {
	q.Limit = 2
	return d.HTTPClient.WalkRefunds(ctx, q, fn)
}

// lowBuckets is smallPages whose buckets of the policies in low read at 0
// of 200 for ever (a stale policy service, other callers spending them),
// the others full; reads counts the buckets read.
type lowBuckets struct {
	smallPages
	low   map[string]bool
	reads atomic.Int32
}

func (d *lowBuckets) Bucket(_ context.Context, policy string) (dict.Bucket, error) {
	d.reads.Add(1)
	b := dict.Bucket{Name: policy, AvailableTokens: 200, Capacity: 200, RefillTokens: 40, RefillPeriodSec: 60}
	if d.low[policy] {
		b.AvailableTokens = 0
	}
	return b, nil
}

// lowFixture is a lister fixture whose DICT reads the buckets of low at 0
// for ever.
func lowFixture(t *testing.T, opts dictsim.Options, low ...string) (*listerFixture, *lowBuckets) {
	f := newListerFixture(t, opts)
	d := &lowBuckets{smallPages: smallPages{f.client}, low: map[string]bool{}}
	for _, p := range low {
		d.low[p] = true
	}
	f.lister.DICT = d
	f.env = sagatest.Activities(f.lister)
	return f, d
}

// listRun opens n reports, runs the lister once and requires each taken
// in once, the covered end not before any; it returns the reports and the
// covered end.
func (f *listerFixture) listRun(n int) ([]dict.InfractionReport, time.Time) {
	var reports []dict.InfractionReport
	for range n {
		reports = append(reports, f.open())
	}
	until, err := f.run()
	require.NoError(f.t, err)
	for _, r := range reports {
		require.Equal(f.t, 1, f.doors.changed[r.ID], "report %s", r.ID)
		require.False(f.t, until.Before(r.LastModified), "covered until %s, before report %s (%s)", until, r.ID, r.LastModified)
	}
	return reports, until
}

// throttled is the lister's count of pages held back for policy's bucket.
func throttled(policy string) float64 {
	return testutil.ToFloat64(med.ListThrottled.WithLabelValues(policy))
}

// A bucket that reads low for ever (MED-1, MED-3) slows the lister, never
// stops it: with the default overlap (2 minutes), a run after the first
// lists every report of its window and covers it to its end, each page
// after a list's first held back (a bounded wait), the bucket read once
// by the list of many pages, none by the list of one. Before, the run
// asked no page at all and covered nothing, every run the same.
func TestALowBucketSlowsTheListerNeverStopsIt(t *testing.T) {
	f, d := lowFixture(t, dictsim.Options{})
	first, err := f.run()
	require.NoError(t, err)
	d.low[dict.PolicyInfractionReportsListWithRole] = true
	held, pages, reads := throttled(dict.PolicyInfractionReportsListWithRole), f.ts.Calls()["listInfractionReport"], d.reads.Load()
	_, until := f.listRun(7)
	require.True(t, until.After(first))
	pages = f.ts.Calls()["listInfractionReport"] - pages
	require.GreaterOrEqual(t, pages, 4)
	require.Equal(t, float64(pages-1), throttled(dict.PolicyInfractionReportsListWithRole)-held, "every page after the first held back")
	require.Equal(t, int32(1), d.reads.Load()-reads, "one read, by the list of many pages")
	require.Equal(t, 0.0, testutil.ToFloat64(med.BucketTokens.WithLabelValues(dict.PolicyInfractionReportsListWithRole)))
}

// A first run under a low bucket (MED-2) covers its lookback whole: every
// report listed, the covered end at its window's end. Before, it recorded
// nothing, its lookback sliding on at every run.
func TestAFirstRunUnderALowBucketCoversItsLookback(t *testing.T) {
	f, _ := lowFixture(t, dictsim.Options{}, dict.PolicyInfractionReportsListWithRole, dict.PolicyRefundListWithRole)
	held := throttled(dict.PolicyInfractionReportsListWithRole)
	f.listRun(5)
	require.Greater(t, throttled(dict.PolicyInfractionReportsListWithRole), held)
}

// The refund requests' list is throttled by its own bucket
// (REFUND_LIST_WITH_ROLE, low), the reports' by theirs (full, none held
// back), and every request is taken in.
func TestTheRefundListIsThrottledByItsBucket(t *testing.T) {
	f, _ := lowFixture(t, dictsim.Options{}, dict.PolicyRefundListWithRole)
	var refunds []dict.Refund
	for range 5 {
		refunds = append(refunds, f.refundOpened(f.open()))
	}
	reportsHeld, refundsHeld, pages := throttled(dict.PolicyInfractionReportsListWithRole), throttled(dict.PolicyRefundListWithRole), f.ts.Calls()["listRefund"]
	_, err := f.run()
	require.NoError(t, err)
	for _, r := range refunds {
		require.Equal(t, 1, f.doors.changed["refund:"+r.ID], "refund request %s", r.ID)
	}
	pages = f.ts.Calls()["listRefund"] - pages
	require.GreaterOrEqual(t, pages, 3)
	require.Equal(t, float64(pages-1), throttled(dict.PolicyRefundListWithRole)-refundsHeld)
	require.Equal(t, reportsHeld, throttled(dict.PolicyInfractionReportsListWithRole), "the reports' bucket is full")
}

// The pages a walk asks of a crowded instant (more items modified at it
// than a page holds: one list by status) are throttled as the others, and
// every report of it is listed: 5 reports of one instant, pages of 2: two
// pages, the instant's four (one a status), the one after it.
func TestACrowdedInstantsPagesAreThrottledToo(t *testing.T) {
	at := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	f, _ := lowFixture(t, dictsim.Options{Now: func() time.Time { return at }}, dict.PolicyInfractionReportsListWithRole)
	held := throttled(dict.PolicyInfractionReportsListWithRole)
	f.listRun(5)
	require.Equal(t, 7, f.ts.Calls()["listInfractionReport"])
	require.Equal(t, 6.0, throttled(dict.PolicyInfractionReportsListWithRole)-held, "every page after the first held back, the instant's too")
}

// A bucket that can't be read (the policies' base down, or MED_DICT_POLICIES_URL
// unset and the API's base not serving them) loses the throttle, never the
// listing: the run lists its window whole; the failure is counted and the
// gauge is NaN.
func TestAListerThatCannotReadItsBucketListsOn(t *testing.T) {
	f := newListerFixture(t, dictsim.Options{})
	f.lister.DICT = smallPages{f.client}
	f.env = sagatest.Activities(f.lister)
	f.ts.SetAnswerHook(func(x *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer {
		if x.Op == "getPolicy" {
			return dictsim.ProblemAnswer(http.StatusServiceUnavailable, "ServiceUnavailable", "")
		}
		return model()
	})
	failed := testutil.ToFloat64(med.BucketReadFailures.WithLabelValues(dict.PolicyInfractionReportsListWithRole))
	f.listRun(3)
	require.Equal(t, 1, f.ts.Calls()["getPolicy"], "read once, by the list of many pages")
	require.Equal(t, 1.0, testutil.ToFloat64(med.BucketReadFailures.WithLabelValues(dict.PolicyInfractionReportsListWithRole))-failed)
	require.True(t, math.IsNaN(testutil.ToFloat64(med.BucketTokens.WithLabelValues(dict.PolicyInfractionReportsListWithRole))))
}

// Attack review LOW-4: a 429 says the list's bucket is empty, whatever the
// lister counted from its reading: the count starts again from none and
// the pages after it are throttled. A full bucket, its third page answered
// 429 once: every page after the 429 is held back (the count never gets
// back above the reserve in a few pages). Before, the count went on from
// the reading (full) and none was.
func TestA429EmptiesTheListersCount(t *testing.T) {
	f, _ := lowFixture(t, dictsim.Options{})
	pages := 0
	f.ts.SetAnswerHook(func(x *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer {
		if x.Op == "listInfractionReport" {
			if pages++; pages == 3 {
				return dictsim.ProblemAnswer(http.StatusTooManyRequests, "RateLimited", "")
			}
		}
		return model()
	})
	held := throttled(dict.PolicyInfractionReportsListWithRole)
	f.listRun(9)
	require.GreaterOrEqual(t, pages, 6)
	require.Equal(t, float64(pages-3), throttled(dict.PolicyInfractionReportsListWithRole)-held, "every page after the 429 held back, none before")
}
