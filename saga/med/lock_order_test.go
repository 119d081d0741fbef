package med_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/saga/med"
)

// Attack review (issue 37, LOW-1): a report stopped on a quarantined copy
// meets it again (its step retried, NoteProblemOn once more) while a clear
// of that copy runs, stepped by hand: the clear deletes the copy's row,
// the stop comes (and waits for that row), then the clear wakes the
// reports stopped on the copy, this one among them. The stop took its
// report's lock before the copy's row, the clear the row before the
// report: the two deadlocked (40P01; InTx retried it, healed, but a
// deadlock on a money path is a defect). One order now, the copy's row
// first: the clear's Wake takes the report, which the stop waiting at the
// row does not hold, and wakes it; the stop then finds the report moved
// and records nothing. Seen failing on the old order (the clear's Wake:
// 40P01).
func TestAStopAndAClearOfItsCopyAtOnceDoNotDeadlock(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, r := f.held(10_000, 0)
	q := med.Quarantined{Kind: med.QuarantinedRefund, ID: uuid.NewString(), LastModified: time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond),
		Reason: "dict_malformed:RefundAmount"}
	_, err := f.store.Quarantine(ctx, q)
	require.NoError(t, err)
	problem := "dict_malformed: refund " + q.ID
	r, _, err = f.store.NoteProblemOn(ctx, r, problem, q) // the first stop
	require.NoError(t, err)

	// The clear, by hand, on a connection of its own; it finds a deadlock
	// at once (its deadlock_timeout short), long before the stop would
	// (the default second), so a deadlock is its error, not retried.
	clearSQL, wakeSQL := med.QuarantineClearSQL()
	conn, err := f.s.Pool().Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL deadlock_timeout = '20ms'`)
	require.NoError(t, err)
	rs, err := tx.Query(ctx, clearSQL, q.Kind, q.ID, q.LastModified)
	require.NoError(t, err)
	cleared, err := pgx.CollectRows(rs, pgx.RowTo[time.Time])
	require.NoError(t, err)
	require.Len(t, cleared, 1)

	type noted struct {
		r   med.Report
		err error
	}
	stop := make(chan noted, 1)
	go func() {
		out, _, err := f.store.NoteProblemOn(ctx, r, problem, q)
		stop <- noted{out, err}
	}()
	dbtest.WaitBlockedBy(t, f.s, conn.Conn().PgConn().PID())

	rs, err = tx.Query(ctx, wakeSQL, q.Kind, q.ID, cleared)
	require.NoError(t, err)
	woken, err := pgx.CollectRows(rs, pgx.RowTo[uuid.UUID])
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		require.NotEqual(t, "40P01", pgErr.Code, "the clear's wake deadlocked with the stop: %v", err)
	}
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{r.ID}, woken, "the stopped report woken")
	require.NoError(t, tx.Commit(ctx))

	got := <-stop
	require.NoError(t, got.err)
	require.Equal(t, r.Gen+1, got.r.Gen, "the stop finds the report the clear moved, and changes nothing")
	now, err := f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, r.Gen+1, now.Gen)
}
