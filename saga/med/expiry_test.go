package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// coveredAt is the DICT lister's covered window, ended at until.
type coveredAt struct{ until time.Time }

func (c coveredAt) CoveredUntil(context.Context) (time.Time, bool, error) { return c.until, true, nil }

// The 72 hours' expiry costs no DICT list when the DICT's lister has
// covered the report's deadline (every request made in time was handed to
// the doors): released on our record. A lister that runs but is not past
// the deadline yet is waited for (an error, retried), nothing listed nor
// released. A lister behind (or off): the DICT is listed, from our close's
// mark less the clock skew the client accepts, not an hour before.
func TestTheExpiryCostsNoListWhenTheListerCoveredIt(t *testing.T) {
	f := newFixture(t)
	a, r := analysed(t, f, dict.Agreed)
	r, err := a.run(a.acts.CloseReport, r)
	require.NoError(t, err)
	sent := a.current(r).CloseSentAt // not in the run's copy (json:"-"): the activity reads the row
	require.NotNil(t, sent)
	due := *r.RequestDueAt

	a.acts.Store = f.store.WithClock(func() time.Time { return due.Add(time.Minute) })
	a.acts.Covered = coveredAt{until: due.Add(-10 * time.Second)}
	_, err = a.run(a.acts.ExpireRequest, r)
	require.Error(t, err, "the lister runs: waited for")
	require.NotContains(t, a.dict.ops, "listRefund")
	require.Equal(t, med.StatusAwaitingRequest, a.current(r).Status)

	a.acts.Store = f.store.WithClock(func() time.Time { return due.Add(med.ExpiryCovered) })
	a.acts.Covered = coveredAt{until: due.Add(-time.Hour)}
	_, err = a.run(a.acts.ExpireRequest, r)
	require.NoError(t, err)
	require.Contains(t, a.dict.ops, "listRefund", "the lister behind: the DICT listed")
	require.True(t, sent.Add(-dict.DefaultResponseTimeSkew).Equal(a.dict.refundQuery.ModifiedAfter),
		"from our close's mark less the DICT's clock skew: %s", a.dict.refundQuery.ModifiedAfter)

	b, r2 := analysed(t, f, dict.Agreed)
	r2, err = b.run(b.acts.CloseReport, r2)
	require.NoError(t, err)
	due2 := *r2.RequestDueAt
	b.acts.Store = f.store.WithClock(func() time.Time { return due2.Add(med.ExpiryCovered) })
	b.acts.Covered = coveredAt{until: due2.Add(med.ExpiryCovered)}
	out, err := b.run(b.acts.ExpireRequest, r2)
	require.NoError(t, err)
	require.Equal(t, med.StatusEnded, out.Status)
	require.Equal(t, med.EndReleased, *out.EndCause)
	require.NotContains(t, b.dict.ops, "listRefund", "covered: no list")
}
