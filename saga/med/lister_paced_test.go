package med_test

import (
	"context"
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

// smallPages is the DICT client whose walks of the reports ask pages of
// two: a few reports make a list of many pages.
type smallPages struct{ *dict.HTTPClient }

func (d smallPages) WalkInfractionReports(ctx context.Context, q dict.ReportQuery, fn func(dict.InfractionReport) error) (time.Time, error) {
	q.Limit = 2
	return d.HTTPClient.WalkInfractionReports(ctx, q, fn)
}

// The bucket of the reports' list holds 10 tokens, refilled one a minute
// (the reserve: 2), and the list is 12 pages: the run reads the bucket,
// asks 8 pages and stops before the 429 (none is answered), counted and
// gauged; the covered end stops before the last instant it handed (the
// next page would have begun there), after every report before it. A run
// with the bucket at its reserve lists nothing and covers nothing more;
// once the bucket refilled, the next run goes on from the covered end and
// every report is taken in once. Before, the run paged into the 429s and
// failed, the reserve spent.
func TestTheListerStopsPagingAtItsBucketsReserve(t *testing.T) {
	f := newListerFixture(t, dictsim.Options{Limits: map[string]dictsim.Limit{
		dict.PolicyInfractionReportsListWithRole: {RefillPerMinute: 1, BucketSize: 10},
	}})
	f.lister.DICT = smallPages{f.client}
	f.lister.Window.Overlap = 0
	f.env = sagatest.Activities(f.lister)
	var limited atomic.Int32
	f.ts.SetAnswerHook(func(x *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer {
		a := model()
		if a.Status == http.StatusTooManyRequests {
			limited.Add(1)
		}
		return a
	})
	var reports []dict.InfractionReport
	for range 12 {
		reports = append(reports, f.open())
	}
	paced := med.ListPaced.WithLabelValues(dict.PolicyInfractionReportsListWithRole)
	paced0 := testutil.ToFloat64(paced)

	until, err := f.run()
	require.NoError(t, err)
	require.Zero(t, limited.Load(), "no page asked into a 429")
	require.Equal(t, 8, f.ts.Calls()["listInfractionReport"], "the tokens above the reserve")
	require.True(t, until.Before(reports[8].LastModified), "covered until %s, before the last instant handed (%s)", until, reports[8].LastModified)
	require.False(t, until.Before(reports[7].LastModified), "covered until %s, past every report before it", until)
	require.Equal(t, 1.0, testutil.ToFloat64(paced)-paced0)
	require.Equal(t, 10.0, testutil.ToFloat64(med.BucketTokens.WithLabelValues(dict.PolicyInfractionReportsListWithRole)))
	for _, r := range reports[:8] {
		require.Equal(t, 1, f.doors.changed[r.ID], "report %s", r.ID)
	}

	again, err := f.run()
	require.NoError(t, err)
	require.True(t, again.Equal(until), "at the reserve: nothing listed, nothing covered")
	require.Equal(t, 8, f.ts.Calls()["listInfractionReport"])
	require.Equal(t, 2.0, testutil.ToFloat64(paced)-paced0)

	_, err = f.ts.Advance(10 * time.Minute) // the bucket refills
	require.NoError(t, err)
	_, err = f.run()
	require.NoError(t, err)
	require.Zero(t, limited.Load())
	require.Equal(t, 2.0, testutil.ToFloat64(paced)-paced0, "the rest fits the refilled bucket")
	for _, r := range reports {
		require.Equal(t, 1, f.doors.changed[r.ID], "report %s", r.ID)
	}
}

// A bucket that can't be read (the policies' base down) loses the pacing,
// never the listing: the run lists its window whole.
func TestAListerThatCannotReadItsBucketListsOn(t *testing.T) {
	f := newListerFixture(t, dictsim.Options{})
	f.ts.SetAnswerHook(func(x *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer {
		if x.Op == "getPolicy" {
			return dictsim.ProblemAnswer(http.StatusServiceUnavailable, "ServiceUnavailable", "")
		}
		return model()
	})
	r := f.open()
	_, err := f.run()
	require.NoError(t, err)
	require.Equal(t, 1, f.doors.changed[r.ID])
	require.Equal(t, 2, f.ts.Calls()["getPolicy"], "read before each list")
}
