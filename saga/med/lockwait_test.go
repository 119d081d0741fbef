package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// Issue 37, attack review r9 LOW-3: Settle read the report's hold through
// the pool (db.Store.GetHold) inside decide's transaction, which holds a
// connection and the report's lock: with every other connection taken (as
// many Settles at once as the pool has connections) it waited for itself.
// The hold is read through the transaction. Seen failing on the old
// Settle (context deadline exceeded); the deadline only ends a test that
// would hang.
func TestSettleNeedsOneConnection(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(10_000, 0)
	in := report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
	r := f.agreedAndClosed(f.step(f.store.Hold(ctx, f.intake(in))), in)
	r = f.returnedByPSP(request(r, 10_000, dict.RefundOpen), "D12345678202612061200abcdefghijk")

	pool := f.s.Pool()
	var held []*pgxpool.Conn
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()
	for i := int32(1); i < pool.Config().MaxConns; i++ {
		conn, err := pool.Acquire(ctx)
		require.NoError(t, err)
		held = append(held, conn)
	}
	tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	out, changed, err := f.store.Settle(tctx, r)
	require.NoError(t, err, "Settle waited for a second connection under the report's lock")
	require.True(t, changed)
	require.EqualValues(t, 10_000, out.ReturnedCents)
}

// Issue 37, attack review r9 LOW-2: Return decided a report's 90 days
// (ReturnUntil) after the report's lock, then waited for the PIX's credit,
// the account's and the hold's locks: 90 days that ended during that wait
// still handed money to a devolução. The deadline is checked again after
// the last lock, and its end changes nothing, as before the locks. Seen
// failing on the old Return (a devolução recorded after return_until).
func TestAReturnWhoseDaysEndWhileItWaitsForTheCreditChangesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	account, r := f.awaitingCredit()
	f.creditMore(account, 2_000) // fills the hold: a return would capture it
	_, err := f.s.Pool().Exec(ctx, `UPDATE pix_med_reports SET return_until = now() + interval '700 milliseconds' WHERE id = $1`, r.ID)
	require.NoError(t, err)
	r, err = f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.EqualValues(t, 2_000, r.HeldCents)

	holder, err := f.s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(ctx) }()
	_, err = holder.Exec(ctx, `SELECT 1 FROM pix_credits WHERE end_to_end_id = $1 FOR NO KEY UPDATE`, r.EndToEndID)
	require.NoError(t, err)
	type result struct {
		r       med.Report
		changed bool
		err     error
	}
	done := make(chan result, 1)
	go func() {
		out, changed, err := f.store.Return(ctx, r)
		done <- result{out, changed, err}
	}()
	dbtest.WaitBlockedBy(t, f.s, holder.Conn().PgConn().PID())
	require.Eventually(t, func() bool {
		var passed bool
		require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT return_until < clock_timestamp() FROM pix_med_reports WHERE id = $1`, r.ID).Scan(&passed))
		return passed
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, holder.Commit(ctx))
	got := <-done
	require.NoError(t, got.err)
	require.False(t, got.changed, "returned at %s, after its 90 days", got.r.Status)
	require.Equal(t, med.StatusAwaitingCredit, got.r.Status)
	require.Nil(t, got.r.RefundID)
	f.requireMoney(account, 2_000, 2_000)
	f.requireBooks()
}
