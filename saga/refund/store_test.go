package refund_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/refund"
)

// The saga's store against PostgreSQL: its own statements (the reversal,
// the refusal and its fence, the outcome), over the core's hand-over.

func renderRefund(r pix.Refund) ([]byte, error) { return json.Marshal(r) }

func anyone(string) bool { return true }

// newStore is the saga's store over a schema of the test's own.
func newStore(t *testing.T) *refund.Store { return refund.NewStore(dbtest.New(t)) }

// returnPIX runs one devolução of the PIX under a fresh key, as POST
// /pix/credits/{id}/refunds does.
func returnPIX(t *testing.T, s *refund.Store, e2e string, amount int64, mayRefund func(string) bool) (pix.Refund, error) {
	t.Helper()
	return s.CreateRefund(context.Background(), *dbtest.Reserve(t, s.Store, "test-caller"), db.NewRefund{ID: pix.NewRefundID(),
		RefundRequest: pix.RefundRequest{EndToEndID: e2e, AmountCents: amount, Reason: "devolução"}}, mayRefund, renderRefund)
}

// creditedStore is the saga's store over a schema of the test's own, with
// acc-1 (opened empty) credited 10,000 by a PIX: its end_to_end_id.
func creditedStore(t *testing.T) (*refund.Store, string) {
	t.Helper()
	s := newStore(t)
	dbtest.OpenAccount(t, s.Store, "acc-1", 0)
	return s, creditPIX(t, s, 1, "acc-1", 10_000)
}

// mustReturn runs one devolução of amount of the PIX (returnPIX), which
// must be debited.
func mustReturn(t *testing.T, s *refund.Store, e2e string, amount int64) pix.Refund {
	t.Helper()
	r, err := returnPIX(t, s, e2e, amount, anyone)
	require.NoError(t, err)
	return r
}

// ask marks the refund asked of the PSP (a PUT about to be sent): whether
// it was the first ask.
func ask(t *testing.T, s *refund.Store, id string) bool {
	t.Helper()
	first, err := s.MarkRefundAsked(context.Background(), id)
	require.NoError(t, err)
	return first
}

// refuse records the PSP's refusal of the refund: whether it was recorded.
func refuse(t *testing.T, s *refund.Store, id, reason string) bool {
	t.Helper()
	recorded, err := s.MarkRefundRefused(context.Background(), id, reason)
	require.NoError(t, err)
	return recorded
}

// standing is whether a refusal of the PSP's stands on the refund.
func standing(t *testing.T, s *refund.Store, id string) bool {
	t.Helper()
	_, stands, err := s.StandingRefusal(context.Background(), id)
	require.NoError(t, err)
	return stands
}

// creditPIX credits amount to account under the n-th end_to_end_id,
// through the credit's path (dbtest.CreditPIX).
func creditPIX(t *testing.T, s *refund.Store, n int, account string, amount int64) string {
	t.Helper()
	return dbtest.CreditPIX(t, s.Store, dbtest.PIX{EndToEndID: fmt.Sprintf("E12345678202611291200%011d", n), AccountID: account,
		AmountCents: amount}).EndToEndID
}

func TestRefundLife(t *testing.T) {
	ctx := context.Background()
	s, e2e := creditedStore(t)

	first := mustReturn(t, s, e2e, 4_000)
	require.Equal(t, pix.RefundDebited, first.Status)
	require.EqualValues(t, 6_000, first.BalanceAfterCents)
	require.Equal(t, e2e, first.EndToEndID)
	require.Equal(t, "acc-1", first.AccountID)
	require.Equal(t, []string{db.EventRefundDebited}, dbtest.Events(t, s.Store, "pix_refund", first.ID))

	_, err := returnPIX(t, s, e2e, 6_001, anyone)
	require.ErrorIs(t, err, pix.ErrRefundExceedsCredit, "4000 + 6001 > 10000")
	second, err := returnPIX(t, s, e2e, 6_000, anyone)
	require.NoError(t, err, "4000 + 6000 = the credit")
	require.Zero(t, dbtest.Balance(t, s.Store, "acc-1"))
	_, err = returnPIX(t, s, e2e, 1, anyone)
	require.ErrorIs(t, err, pix.ErrRefundExceedsCredit)

	// The first is returned: final, its event once.
	requested, err := s.MarkRefundRequested(ctx, first.ID, "D12345678202611291200000000000001")
	require.NoError(t, err)
	require.Equal(t, pix.RefundRequested, requested.Status)
	returned, err := s.MarkRefundReturned(ctx, first.ID, "")
	require.NoError(t, err)
	require.Equal(t, pix.RefundReturned, returned.Status)
	require.Equal(t, "D12345678202611291200000000000001", *returned.RtrID)
	_, err = s.MarkRefundReturned(ctx, first.ID, "")
	require.NoError(t, err, "a retry whose first try committed")
	_, err = s.ReverseRefund(ctx, first.ID, "late contradiction", false)
	require.ErrorIs(t, err, pix.ErrRefundFinal, "money the PSP returned is never credited back")
	require.Equal(t, []string{db.EventRefundDebited, db.EventRefundReturned}, dbtest.Events(t, s.Store, "pix_refund", first.ID))

	// The second is not: reversed exactly once, and its room is free again.
	reversed, err := s.ReverseRefund(ctx, second.ID, "conta encerrada", false)
	require.NoError(t, err)
	require.Equal(t, pix.RefundReversed, reversed.Status)
	again, err := s.ReverseRefund(ctx, second.ID, "conta encerrada", false)
	require.NoError(t, err)
	require.Equal(t, pix.RefundReversed, again.Status)
	require.EqualValues(t, 6_000, dbtest.Balance(t, s.Store, "acc-1"))
	_, err = s.MarkRefundReturned(ctx, second.ID, "")
	require.ErrorIs(t, err, pix.ErrRefundFinal)
	require.Equal(t, []string{db.EventRefundDebited, db.EventRefundReversed}, dbtest.Events(t, s.Store, "pix_refund", second.ID))
	_, err = returnPIX(t, s, e2e, 6_000, anyone)
	require.NoError(t, err, "a reversed refund no longer counts")

	list, err := s.RefundsOf(ctx, e2e)
	require.NoError(t, err)
	require.Len(t, list, 3)
	require.Equal(t, first.ID, list[0].ID)
	dbtest.RequireBooks(t, s.Store)
}

// A reversal on the PSP's refusal stands only while nothing says the PSP
// took the devolução, checked under the refund's lock: an rtr_id or a
// notice stops it (nothing changed).
func TestReversalOnARefusalIsCheckedUnderTheLock(t *testing.T) {
	ctx := context.Background()
	s, e2e := creditedStore(t)

	noticed := mustReturn(t, s, e2e, 1_000)
	require.True(t, ask(t, s, noticed.ID))
	require.False(t, ask(t, s, noticed.ID), "asked once already")
	_, err := s.NoteRefundOutcomes(ctx, []db.RefundNotice{{ID: noticed.ID, EndToEndID: e2e, Status: "DEVOLVIDO"}})
	require.NoError(t, err)
	_, err = s.ReverseRefund(ctx, noticed.ID, "refused", true)
	require.ErrorIs(t, err, pix.ErrRefundFinal)

	taken := mustReturn(t, s, e2e, 1_000)
	_, err = s.MarkRefundRequested(ctx, taken.ID, "D12345678202611291200000000000009")
	require.NoError(t, err)
	_, err = s.ReverseRefund(ctx, taken.ID, "refused", true)
	require.ErrorIs(t, err, pix.ErrRefundFinal)

	untouched := mustReturn(t, s, e2e, 1_000)
	reversed, err := s.ReverseRefund(ctx, untouched.ID, "refused", true)
	require.NoError(t, err)
	require.Equal(t, pix.RefundReversed, reversed.Status)
	require.EqualValues(t, 10_000-2_000, dbtest.Balance(t, s.Store, "acc-1"), "only the untouched one came back")
	dbtest.RequireBooks(t, s.Store)
}

// The PSP's refusal is recorded, and stands, only while nothing says the
// PSP took the devolução (no rtr_id, no notice): the same fence as the
// reversal's on it. The first refusal's reason is kept.
func TestRefundRefusalRecordedWhileItStands(t *testing.T) {
	ctx := context.Background()
	s, e2e := creditedStore(t)

	refused := mustReturn(t, s, e2e, 1_000)
	require.False(t, standing(t, s, refused.ID), "no refusal recorded yet")
	require.True(t, refuse(t, s, refused.ID, "PixDevolucaoInvalida: fora do prazo"))
	require.True(t, refuse(t, s, refused.ID, "another"))
	reason, stands, err := s.StandingRefusal(ctx, refused.ID)
	require.NoError(t, err)
	require.True(t, stands)
	require.Equal(t, "PixDevolucaoInvalida: fora do prazo", reason, "the first refusal kept")

	// A notice since: the refusal no longer stands.
	_, err = s.NoteRefundOutcomes(ctx, []db.RefundNotice{{ID: refused.ID, EndToEndID: e2e, Status: "DEVOLVIDO"}})
	require.NoError(t, err)
	require.False(t, standing(t, s, refused.ID))

	// An rtr_id first: never recorded.
	taken := mustReturn(t, s, e2e, 1_000)
	_, err = s.MarkRefundRequested(ctx, taken.ID, "D12345678202611291200000000000009")
	require.NoError(t, err)
	require.False(t, refuse(t, s, taken.ID, "refused"), "the psp took it: the refusal does not stand")
	require.False(t, standing(t, s, taken.ID))

	_, _, err = s.StandingRefusal(ctx, pix.NewRefundID())
	require.ErrorIs(t, err, pix.ErrRefundNotFound)
}

// Found by an attack review: attempt A spends the first ask, its PUT is
// refused (400 PixDevolucaoInvalida) and its GET finds no record; before A
// records the refusal, attempt B (an overlapping retry, or a run started
// when A's timed out) asks again and hands its PUT to the network, which
// may make the devolução and lose its answer. A's refusal, recorded late,
// must not stand: not recorded, not read as standing, never reversed on.
// A refusal recorded in time stops standing at the next ask too.
func TestRefusalAfterALaterAskDoesNotStand(t *testing.T) {
	ctx := context.Background()
	s, e2e := creditedStore(t)

	late := mustReturn(t, s, e2e, 1_000)
	require.True(t, ask(t, s, late.ID), "attempt A, just before its PUT")
	require.False(t, ask(t, s, late.ID), "attempt B, just before its PUT (answer lost)")
	require.False(t, refuse(t, s, late.ID, "PixDevolucaoInvalida"), "recorded after a later ask, whose PUT may have made the devolução") // attempt A, late
	require.False(t, standing(t, s, late.ID))
	_, err := s.ReverseRefund(ctx, late.ID, "refused", true)
	require.ErrorIs(t, err, pix.ErrRefundFinal)
	got, err := s.GetRefund(ctx, late.ID)
	require.NoError(t, err)
	require.Equal(t, pix.RefundDebited, got.Status, "open, for the PSP's record or a human")

	// Recorded in time, then another ask (a run that read no standing
	// refusal just before it was recorded): it no longer stands.
	followed := mustReturn(t, s, e2e, 1_000)
	require.True(t, ask(t, s, followed.ID))
	require.True(t, refuse(t, s, followed.ID, "PixDevolucaoInvalida"), "the first PUT's refusal, the only PUT sent")
	require.True(t, standing(t, s, followed.ID))
	_, err = s.MarkRefundAsked(ctx, followed.ID)
	require.NoError(t, err)
	require.False(t, standing(t, s, followed.ID), "a PUT sent after the refusal may have made the devolução")
	_, err = s.ReverseRefund(ctx, followed.ID, "refused", true)
	require.ErrorIs(t, err, pix.ErrRefundFinal)

	require.EqualValues(t, 10_000-2_000, dbtest.Balance(t, s.Store, "acc-1"), "neither reversed")
	dbtest.RequireBooks(t, s.Store)

	require.False(t, ask(t, s, pix.NewRefundID()), "no such refund: nothing asked")
}
