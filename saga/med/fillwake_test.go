package med_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/block"
	"github.com/pixbank/pix/saga/med"
	refundsaga "github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/saga/sagatest"
)

// inParts is a report returned in part (3,000 of 10,000), its hold holding
// nothing, waiting for credits; its 90 days end 3 hours from the start.
func inParts() med.Report {
	r := received()
	r.Status, r.DICTStatus = med.StatusAwaitingCredit, string(dict.ReportClosed)
	r.AnalysisResult = ptr(string(dict.Agreed))
	r.RefundRequestID, r.RefundRequestCents, r.RefundRequestState = ptr(uuid.New()), ptr(int64(10_000)), ptr(string(dict.RefundOpen))
	r.ReturnedCents, r.Returns, r.FirstRtrID = 3_000, 1, ptr("D12345678202612061300abcdefghijk")
	r.RefundClosedAt = ptr(start)
	r.ReturnUntil = ptr(start.Add(3 * time.Hour))
	return r
}

// fill is an inflow of the account filling the report's hold by cents, in
// the inflow's transaction: the report's row (its generation) unchanged,
// what its hold holds (LoadReport's HeldCents) grown. wake: the fill's
// wake-up after the commit (med.FillsWake) is sent, not lost.
func (s *stub) fill(cents int64, wake bool) {
	s.mu.Lock()
	s.r.HeldCents += cents
	s.mu.Unlock()
	if wake {
		s.env.SignalWorkflow(med.ChangedSignal, nil)
	}
}

// A credit that fills the hold while the run waits for credits wakes it:
// the part is returned at once, not at the next hourly look (CreditPoll).
// Before the wake-up, the run read the report on the signal, found its
// generation unchanged and slept on to the hour.
func TestAFillWakesTheReturnInParts(t *testing.T) {
	env, s := newRun(t, inParts())
	filledAt := 10 * time.Minute
	env.RegisterDelayedCallback(func() { s.fill(2_000, true) }, filledAt)

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: s.r.ID.String()})

	out := result(t, env)
	require.EqualValues(t, 5_000, out.ReturnedCents)
	settled := s.called("SettleReport")
	require.NotEmpty(t, settled)
	require.Less(t, settled[0].Sub(start), filledAt+time.Minute, "the part returned at %s, not at the fill's wake-up", settled[0])
}

// A wake-up lost (the worker gone between the credit's commit and the
// signal, Temporal away): the money stays held, and the hourly look
// returns it.
func TestAFillWhoseWakeIsLostIsReturnedAtTheHourlyLook(t *testing.T) {
	env, s := newRun(t, inParts())
	env.RegisterDelayedCallback(func() { s.fill(2_000, false) }, 10*time.Minute)

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: s.r.ID.String()})

	out := result(t, env)
	require.EqualValues(t, 5_000, out.ReturnedCents)
	tries := s.called("ReturnReport")
	require.GreaterOrEqual(t, len(tries), 2)
	require.Equal(t, start, tries[0])
	require.Equal(t, start.Add(med.CreditPoll), tries[1], "the hourly look returns it")
	settled := s.called("SettleReport")
	require.NotEmpty(t, settled)
	require.False(t, settled[0].Before(start.Add(med.CreditPoll)), "returned at %s", settled[0])
}

// A wake-up that finds nothing filled (a duplicate, a late one, a signal
// of a change that did not happen) changes nothing: no try before the
// hourly look.
func TestAWakeWithoutAFillChangesNothing(t *testing.T) {
	env, s := newRun(t, inParts())
	env.RegisterDelayedCallback(func() { s.fill(0, true) }, 10*time.Minute)
	env.RegisterDelayedCallback(func() { s.fill(0, true) }, 20*time.Minute)

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: s.r.ID.String()})

	out := result(t, env)
	require.EqualValues(t, 3_000, out.ReturnedCents)
	tries := s.called("ReturnReport")
	require.GreaterOrEqual(t, len(tries), 2)
	require.Equal(t, start.Add(med.CreditPoll), tries[1], "no try before the hourly look")
	require.Empty(t, s.called("SettleReport"))
}

// awaitingCredit is a report AGREED of a PIX of 10,000 whose account spent
// 7,000: its request returned 3,000, and it waits for credits, its hold
// (kept by the capture) filling and holding nothing.
func (f *fixture) awaitingCredit() (account string, r med.Report) {
	ctx := context.Background()
	c, r := f.agreedAfterSpending(7_000)
	r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	r = f.step(f.store.Return(ctx, r))
	_, err := refundsaga.NewStore(f.s).MarkRefundReturned(ctx, *r.RefundID, "D12345678202612061200aaaaaaaaaaa")
	require.NoError(f.t, err)
	r = f.step(f.store.Settle(ctx, r))
	r = f.step(f.store.RefundClosed(ctx, r, *r.FirstRtrID))
	require.Equal(f.t, med.StatusAwaitingCredit, r.Status)
	require.Zero(f.t, r.HeldCents)
	return c.AccountID, r
}

// A credit that fills a report's hold wakes the report's run after the
// credit's commit (med.FillsWake on the store's hook, as registry.WatchFills
// sets it): what the run then reads (its report, Store.Get) has its hold
// holding the credit, the generation unchanged, which ends its wait; a
// credit of another account wakes nothing.
func TestACreditThatFillsTheHoldWakesTheReportsRun(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sig := &sagatest.Signals{}
	f.s.OnHoldsFilled(med.FillsWake(sig, sagatest.Discard()))
	account, r := f.awaitingCredit()
	other := f.credit(500, 0)

	f.creditMore(other.AccountID, 1_000)
	require.Empty(t, sig.Sent(), "no hold of a report filled")

	f.creditMore(account, 4_000)
	require.Equal(t, []string{med.WorkflowID(r.ID.String()) + " " + med.ChangedSignal}, sig.Sent())
	read, err := f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, r.Gen, read.Gen, "the fill is the hold's, not the report's")
	require.EqualValues(t, 4_000, read.HeldCents, "what the woken run reads: the part to return")
	r = f.step(f.store.Return(ctx, read))
	require.Equal(t, med.StatusReturning, r.Status)
	f.requireBooks()
}

// failingSignals is Temporal away: every signal fails.
type failingSignals struct{ tries int }

func (s *failingSignals) SignalWorkflow(context.Context, string, string, string, any) error {
	s.tries++
	return errors.New("temporal: connection refused")
}

// A wake-up that fails never fails the credit: it is committed, its money
// held in the report's hold, and the run's next look returns it.
func TestAFailedWakeDoesNotFailTheCredit(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sig := &failingSignals{}
	f.s.OnHoldsFilled(med.FillsWake(sig, sagatest.Discard()))
	account, r := f.awaitingCredit()

	f.creditMore(account, 4_000) // credited: creditMore requires it
	require.Equal(t, 1, sig.tries)
	f.requireMoney(account, 4_000, 4_000)
	read, err := f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	r = f.step(f.store.Return(ctx, read))
	require.Equal(t, med.StatusReturning, r.Status)
	f.requireBooks()
}

// A hold released (a cautionary block's, here) fills the account's holds
// that lack in the release's transaction: the report whose hold it filled
// is woken after that commit too (fill source hold_release).
func TestABlockReleasedThatFillsTheHoldWakesTheReportsRun(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sig := &sagatest.Signals{}
	f.s.OnHoldsFilled(med.FillsWake(sig, sagatest.Discard()))
	c := f.credit(10_000, 0)
	other := f.creditMore(c.AccountID, 5_000)
	blocks := block.NewStore(f.s)
	b, err := blocks.Create(ctx, nil, block.New{ID: uuid.New(), EndToEndID: other, AmountCents: 5_000, Reason: "suspeita", RequestedBy: "operator-1"},
		func(block.Block) ([]byte, error) { return nil, nil })
	require.NoError(t, err)
	require.NoError(t, f.spend(c.AccountID, 10_000))
	r := f.intake(report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour)))
	r = f.step(f.store.Hold(ctx, r))
	require.Zero(t, r.HeldCents, "nothing available: the hold fills")
	require.Empty(t, sig.Sent())

	_, released, err := blocks.Release(ctx, b.ID, "operator-1")
	require.NoError(t, err)
	require.True(t, released)
	require.Equal(t, []string{med.WorkflowID(r.ID.String()) + " " + med.ChangedSignal}, sig.Sent())
	read, err := f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.EqualValues(t, 5_000, read.HeldCents)
	f.requireBooks()
}
