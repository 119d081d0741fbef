package med_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/saga/med"
)

// statementCounter counts the statements a pool runs (a pgx tracer).
type statementCounter struct{ n atomic.Int64 }

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (*statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// counted runs read and returns how many statements it ran.
func (c *statementCounter) counted(read func()) int64 {
	before := c.n.Load()
	read()
	return c.n.Load() - before
}

// A page of reports reads their holds at once: the list and OfPIX run as
// many statements for one report with a hold as for four (the list read,
// one read of holds), not one read of a hold per row; what each report
// says it holds is still its hold's, read now.
func TestAPageOfReportsReadsItsHoldsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	ctx := context.Background()
	counter := &statementCounter{}
	pool, err := db.Open(ctx, dbtest.URL(t), 4, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = counter })
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	s := db.NewStore(pool)
	f := &fixture{t: t, s: s, store: med.NewStore(s)}

	page := func() []med.Report {
		found, err := f.store.List(ctx, nil, 100)
		require.NoError(t, err)
		return found
	}
	c, _ := f.held(10_000, 0)
	var first []med.Report
	one := counter.counted(func() { first = page() })
	require.Len(t, first, 1)
	require.EqualValues(t, 10_000, first[0].HeldCents)
	require.EqualValues(t, 2, one, "the list read, and one read of its holds")

	for range 3 {
		f.held(5_000, 0)
	}
	var all []med.Report
	four := counter.counted(func() { all = page() })
	require.Len(t, all, 4)
	require.Equal(t, one, four, "a page's statements do not grow with its rows")
	for _, r := range all[1:] {
		require.NotNil(t, r.HoldID)
		require.EqualValues(t, 5_000, r.HeldCents)
	}

	ofPIX := counter.counted(func() {
		found, err := f.store.OfPIX(ctx, c.EndToEndID, 10)
		require.NoError(t, err)
		require.Len(t, found, 1)
		require.EqualValues(t, 10_000, found[0].HeldCents)
	})
	require.EqualValues(t, 2, ofPIX)
}
