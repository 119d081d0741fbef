package med_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagakit"
	"github.com/pixbank/pix/saga/sagatest"
)

// hangingSignals is Temporal unreachable as a gRPC call sees it when
// packets are dropped: the call returns only when its context ends.
type hangingSignals struct{ tries atomic.Int32 }

func (s *hangingSignals) SignalWorkflow(ctx context.Context, _, _, _ string, _ any) error {
	s.tries.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

// Attack r2 (issue MED-1): one credit that fills the holds of three
// reports of its account (a mule with several victims) waited
// sagakit.WakeTimeout per report, one after the other, in the credit
// activity (db.Store.Credit, after the commit): 15 s, beyond
// INBOX_ACTIVITY_TIMEOUT's default 10 s. The wakes of one commit go at
// once, within one deadline for them all (sagakit.WakeAll).
func TestCreditFillingSeveralReportsHoldsWaitsOneBoundForAllWakes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sig := &hangingSignals{}
	f.s.OnHoldsFilled(med.FillsWake(sig, sagatest.Discard()))
	c := f.credit(3_000, 0)
	require.NoError(t, f.spend(c.AccountID, 3_000))
	for i := range 3 {
		require.NoError(t, db.InTx(ctx, f.s.Pool(), func(tx pgx.Tx) error {
			_, _, err := db.Hold(ctx, tx, db.NewHold{Ref: fmt.Sprintf("med:%s:1", uuid.New()), AccountID: c.AccountID,
				AmountCents: 1_000, UpTo: true, FillFromCredits: true, Kind: med.HoldKind, Reason: fmt.Sprint("report ", i)})
			return err
		}))
	}
	started := time.Now()
	f.creditMore(c.AccountID, 3_000) // fills the three holds
	took := time.Since(started)
	t.Logf("the credit returned after %s, %d wakes tried", took, sig.tries.Load())
	dbtest.RequireBooks(t, f.s)
	require.Less(t, took, sagakit.WakeAllTimeout+2*time.Second, "the credit (hot path) waits on Temporal beyond one bound for all its wakes")
	require.EqualValues(t, 3, sig.tries.Load(), "the three reports' runs are each tried, at once")
}
