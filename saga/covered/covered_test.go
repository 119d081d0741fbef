package covered_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/saga/covered"
)

// The covered end moves only forwards, only from the value the run started
// from, never past the database's clock; a retry whose first try committed
// is moved; each lister's window is its own.
func TestTheCoveredEndIsFenced(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	ctx := context.Background()
	s := dbtest.New(t)
	a, b := covered.NewStore(s, "a"), covered.NewStore(s, "b")
	now, err := a.Now(ctx)
	require.NoError(t, err)
	_, ok, err := a.CoveredUntil(ctx)
	require.NoError(t, err)
	require.False(t, ok, "none covered yet")

	t1, t2 := now.Add(-time.Hour).Truncate(time.Microsecond), now.Add(-time.Minute).Truncate(time.Microsecond)
	moved, err := a.Advance(ctx, nil, now.Add(time.Hour))
	require.NoError(t, err)
	require.False(t, moved, "never past the database's clock")
	moved, err = a.Advance(ctx, nil, t1)
	require.NoError(t, err)
	require.True(t, moved)
	moved, err = a.Advance(ctx, nil, t1)
	require.NoError(t, err)
	require.True(t, moved, "a retry whose first try committed")
	moved, err = a.Advance(ctx, nil, t2)
	require.NoError(t, err)
	require.False(t, moved, "a first run that raced another records nothing")

	moved, err = a.Advance(ctx, &t2, t2.Add(time.Second))
	require.NoError(t, err)
	require.False(t, moved, "only from the value the run started from")
	moved, err = a.Advance(ctx, &t1, t1.Add(-time.Second))
	require.NoError(t, err)
	require.False(t, moved, "only forwards")
	moved, err = a.Advance(ctx, &t1, t2)
	require.NoError(t, err)
	require.True(t, moved)
	until, ok, err := a.CoveredUntil(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, until.Equal(t2))

	_, ok, err = b.CoveredUntil(ctx)
	require.NoError(t, err)
	require.False(t, ok, "each lister's window is its own")

	w, err := covered.Begin(ctx, a, covered.Settings{Overlap: 10 * time.Minute, Lookback: 24 * time.Hour, Grace: time.Minute}, time.Second)
	require.NoError(t, err)
	require.True(t, w.Start.Equal(t2.Add(-10*time.Minute).Truncate(time.Second)))
	require.True(t, w.CoveredFrom.Equal(t2))
	require.False(t, w.End.After(time.Now().Add(-time.Minute)))
	w, err = covered.Begin(ctx, b, covered.Settings{Overlap: 10 * time.Minute, Lookback: 24 * time.Hour, Grace: time.Minute}, time.Second)
	require.NoError(t, err)
	require.Nil(t, w.CoveredFrom, "the first window looks back")
	require.WithinDuration(t, time.Now().Add(-24*time.Hour), w.Start, time.Minute)

	require.NoError(t, covered.CheckPart(t1, &t2))
	require.True(t, errors.Is(covered.CheckPart(t2, &t1), covered.ErrGap), "never over a gap")
}
