package med_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// Attack review r14 MED: a report returned in parts with nothing returned
// yet, its request closed REJECTED NO_BALANCE at the DICT by a run whose
// clock runs ahead of the database's (at return_until by the run's clock),
// then answered "not yet" by Finish (the database's clock before
// return_until): the run's Return captured a credit that filled the hold
// within the skew and sent a devolução, the report ending returned_in_part
// with an rtrId while the DICT holds the request REJECTED with none. Its
// request closed REJECTED, the Return changes nothing, whatever the clock:
// nothing captured, no devolução; Finish at return_until ends it released,
// the credit released with the hold. Seen failing on the old Return
// (changed: returning, a devolução recorded).
func TestAReturnAfterARejectedCloseChangesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.nothingReturned()

	past := r.ReturnUntil.Add(time.Second) // the run's clock
	require.Equal(t, med.StepCloseRefund, med.Next(r, past))
	closing := med.Closing(r)
	require.Equal(t, [2]string{string(dict.Rejected), string(dict.RejectionNoBalance)},
		[2]string{string(closing.Result), string(closing.RejectionReason)})
	// Fills the hold within the skew, before the close is recorded: after
	// it the hold fills no more (stopFilling; review r21 MED-2).
	f.creditMore(c.AccountID, 4_000)
	r = f.step(f.store.RefundClosed(ctx, r, closing.RefundTransactionID))

	early := f.store.WithClock(func() time.Time { return r.ReturnUntil.Add(-time.Second) }) // the database's clock
	_, _, err := early.Finish(ctx, r)
	var notYet *med.NotYetError
	require.ErrorAs(t, err, &notYet, "never ended before return_until by the database's clock")
	got, changed, err := early.Return(ctx, r)
	require.NoError(t, err)
	require.False(t, changed, "returned after its request was closed REJECTED: %s", got.Status)
	require.Equal(t, med.StatusAwaitingCredit, got.Status)
	require.Nil(t, got.RefundID)
	require.Zero(t, got.Returns)
	var refunds int
	require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT count(*) FROM pix_refunds WHERE end_to_end_id = $1`, c.EndToEndID).Scan(&refunds))
	require.Zero(t, refunds, "no devolução")
	f.requireMoney(c.AccountID, 4_000, 4_000)

	late := f.store.WithClock(func() time.Time { return r.ReturnUntil.Add(time.Second) })
	r = f.step(late.Finish(ctx, f.get(r)))
	require.Equal(t, med.StatusEnded, r.Status)
	require.Equal(t, med.EndReleased, *r.EndCause)
	require.Nil(t, r.HoldID)
	f.requireMoney(c.AccountID, 4_000, 0)
	f.requireBooks()
}

// nothingReturned is a report whose request was taken with nothing to
// return (its account spent): awaiting_credit, its hold holding nothing.
func (f *fixture) nothingReturned() (dbtest.Credited, med.Report) {
	t, ctx := f.t, context.Background()
	c, r := f.agreedAfterSpending(10_000)
	r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	r = f.step(f.store.Return(ctx, r))
	require.Equal(t, med.StatusAwaitingCredit, r.Status)
	require.Zero(t, r.Returns)
	require.Zero(t, r.HeldCents)
	return c, r
}

// A request closed PARTIALLY_ACCEPTED after a first part is returned on:
// a later part, filled, is returned (closedRejected admits it).
func TestAReturnAfterAPartialCloseGoesOn(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	account, r := f.awaitingCredit()
	require.NotNil(t, r.RefundClosedRtrID)
	f.creditMore(account, 2_000)
	early := f.store.WithClock(func() time.Time { return r.ReturnUntil.Add(-time.Second) })
	r = f.step(early.Return(ctx, f.get(r)))
	require.Equal(t, med.StatusReturning, r.Status)
	f.requireBooks()
}

// closingSkewed is skewed whose close of the refund request at the DICT is
// recorded as Closing says (the DICT's calls are tested in
// activities_test.go).
type closingSkewed struct{ *skewed }

func (s *closingSkewed) CloseRefundRequest(ctx context.Context, at med.Report) (med.Report, error) {
	out, _, err := s.Store.RefundClosed(ctx, at, med.Closing(at).RefundTransactionID)
	return out, err
}

// The finding's run: the run's clock 30 s ahead of the database's, past
// return_until by it, nothing returned: the request closed REJECTED
// NO_BALANCE, Finish "not yet", a credit filling the hold then. The run's
// Return changes nothing; it waits (never spinning) until return_until by
// the database's clock, then ends the report released, the credit
// released with the hold, no devolução.
func TestARunNeverReturnsAfterItsRejectedClose(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.nothingReturned()
	const skew = 30 * time.Second
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(r.ReturnUntil.Add(5 * time.Second))
	env.RegisterWorkflowWithOptions(med.Workflow, workflow.RegisterOptions{Name: med.WorkflowName})
	acts := &med.Activities{Store: f.store.WithClock(func() time.Time { return env.Now().Add(-skew) }),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s := &skewed{Activities: acts, f: f, onNotYet: func() { f.creditMore(c.AccountID, 2_000) }}
	env.RegisterActivity(&closingSkewed{s})

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	out := f.get(r)
	require.Equal(t, med.StatusEnded, out.Status)
	require.Equal(t, med.EndReleased, *out.EndCause)
	require.NotNil(t, out.RefundClosedAt)
	require.Nil(t, out.RefundClosedRtrID)
	require.Zero(t, out.ReturnedCents)
	require.GreaterOrEqual(t, s.notYets, 1, "Finish asked before return_until by the database's clock")
	require.LessOrEqual(t, s.notYets, 2, "the not-yet answered by a wait, not a spin")
	require.Less(t, env.Now().Sub(*r.ReturnUntil), skew+time.Minute, "ended at return_until by the database's clock")
	var refunds int
	require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT count(*) FROM pix_refunds WHERE end_to_end_id = $1`, c.EndToEndID).Scan(&refunds))
	require.Zero(t, refunds, "no devolução")
	f.requireMoney(c.AccountID, 2_000, 0)
	f.requireBooks()
}
