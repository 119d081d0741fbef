package refund_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/refund"
)

// The saga's store against PostgreSQL: its own statements (the reversal,
// the refusal and its fence, the outcome), over the core's hand-over.

var keys = db.KeyPolicy{LockFor: 30 * time.Second, KeepFor: 24 * time.Hour}

func renderRefund(r pix.Refund) ([]byte, error) { return json.Marshal(r) }

func anyone(string) bool { return true }

// newStore is the saga's store over a schema of the test's own.
func newStore(t *testing.T) *refund.Store { return refund.NewStore(dbtest.New(t)) }

// returnPIX runs one devolução of the PIX under a fresh key, as POST
// /pix/credits/{id}/refunds does.
func returnPIX(s *refund.Store, e2e string, amount int64, mayRefund func(string) bool) (pix.Refund, error) {
	ctx := context.Background()
	res, _, err := s.ReserveKey(ctx, "test-caller", uuid.New(), "h", keys)
	if err != nil {
		return pix.Refund{}, err
	}
	return s.CreateRefund(ctx, *res, db.NewRefund{ID: pix.NewRefundID(),
		RefundRequest: pix.RefundRequest{EndToEndID: e2e, AmountCents: amount, Reason: "devolução"}}, mayRefund, renderRefund)
}

func openAccount(t *testing.T, s *refund.Store, id string, opening int64) {
	t.Helper()
	created, err := s.CreateAccount(context.Background(), db.NewAccount{ID: id, OwnerName: "Owner " + id, OpeningBalanceCents: opening})
	require.NoError(t, err)
	require.True(t, created)
}

func balance(t *testing.T, s *refund.Store, id string) int64 {
	t.Helper()
	acc, err := s.GetAccount(context.Background(), id)
	require.NoError(t, err)
	return acc.BalanceCents
}

// creditPIX credits amount to account under the n-th end_to_end_id,
// through the credit's path (dbtest.CreditPIX).
func creditPIX(t *testing.T, s *refund.Store, n int, account string, amount int64) string {
	t.Helper()
	return dbtest.CreditPIX(t, s.Store, dbtest.PIX{EndToEndID: fmt.Sprintf("E12345678202611291200%011d", n), AccountID: account,
		AmountCents: amount}).EndToEndID
}

func refundEvents(t *testing.T, s *refund.Store, id string) []string {
	t.Helper()
	rows, err := s.Pool().Query(context.Background(), `SELECT event_type FROM outbox_events WHERE aggregate_type = 'pix_refund' AND aggregate_id = $1 ORDER BY seq`, id)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var e string
		require.NoError(t, rows.Scan(&e))
		out = append(out, e)
	}
	require.NoError(t, rows.Err())
	return out
}

func requireBalanced(t *testing.T, s *refund.Store) {
	t.Helper()
	rec, err := s.Reconcile(context.Background())
	require.NoError(t, err)
	require.True(t, rec.Balanced(), "%+v", rec)
}

func TestRefundLife(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	openAccount(t, s, "acc-1", 0)
	e2e := creditPIX(t, s, 1, "acc-1", 10_000)

	first, err := returnPIX(s, e2e, 4_000, anyone)
	require.NoError(t, err)
	require.Equal(t, pix.RefundDebited, first.Status)
	require.EqualValues(t, 6_000, first.BalanceAfterCents)
	require.Equal(t, e2e, first.EndToEndID)
	require.Equal(t, "acc-1", first.AccountID)
	require.Equal(t, []string{db.EventRefundDebited}, refundEvents(t, s, first.ID))

	_, err = returnPIX(s, e2e, 6_001, anyone)
	require.ErrorIs(t, err, pix.ErrRefundExceedsCredit, "4000 + 6001 > 10000")
	second, err := returnPIX(s, e2e, 6_000, anyone)
	require.NoError(t, err, "4000 + 6000 = the credit")
	require.Zero(t, balance(t, s, "acc-1"))
	_, err = returnPIX(s, e2e, 1, anyone)
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
	require.Equal(t, []string{db.EventRefundDebited, db.EventRefundReturned}, refundEvents(t, s, first.ID))

	// The second is not: reversed exactly once, and its room is free again.
	reversed, err := s.ReverseRefund(ctx, second.ID, "conta encerrada", false)
	require.NoError(t, err)
	require.Equal(t, pix.RefundReversed, reversed.Status)
	again, err := s.ReverseRefund(ctx, second.ID, "conta encerrada", false)
	require.NoError(t, err)
	require.Equal(t, pix.RefundReversed, again.Status)
	require.EqualValues(t, 6_000, balance(t, s, "acc-1"))
	_, err = s.MarkRefundReturned(ctx, second.ID, "")
	require.ErrorIs(t, err, pix.ErrRefundFinal)
	require.Equal(t, []string{db.EventRefundDebited, db.EventRefundReversed}, refundEvents(t, s, second.ID))
	_, err = returnPIX(s, e2e, 6_000, anyone)
	require.NoError(t, err, "a reversed refund no longer counts")

	list, err := s.RefundsOf(ctx, e2e)
	require.NoError(t, err)
	require.Len(t, list, 3)
	require.Equal(t, first.ID, list[0].ID)
	requireBalanced(t, s)
}

// A reversal on the PSP's refusal stands only while nothing says the PSP
// took the devolução, checked under the refund's lock: an rtr_id or a
// notice stops it (nothing changed).
func TestReversalOnARefusalIsCheckedUnderTheLock(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	openAccount(t, s, "acc-1", 0)
	e2e := creditPIX(t, s, 1, "acc-1", 10_000)

	noticed, err := returnPIX(s, e2e, 1_000, anyone)
	require.NoError(t, err)
	first, err := s.MarkRefundAsked(ctx, noticed.ID)
	require.NoError(t, err)
	require.True(t, first)
	again, err := s.MarkRefundAsked(ctx, noticed.ID)
	require.NoError(t, err)
	require.False(t, again, "asked once already")
	_, err = s.NoteRefundOutcomes(ctx, []db.RefundNotice{{ID: noticed.ID, EndToEndID: e2e, Status: "DEVOLVIDO"}})
	require.NoError(t, err)
	_, err = s.ReverseRefund(ctx, noticed.ID, "refused", true)
	require.ErrorIs(t, err, pix.ErrRefundFinal)

	taken, err := returnPIX(s, e2e, 1_000, anyone)
	require.NoError(t, err)
	_, err = s.MarkRefundRequested(ctx, taken.ID, "D12345678202611291200000000000009")
	require.NoError(t, err)
	_, err = s.ReverseRefund(ctx, taken.ID, "refused", true)
	require.ErrorIs(t, err, pix.ErrRefundFinal)

	untouched, err := returnPIX(s, e2e, 1_000, anyone)
	require.NoError(t, err)
	reversed, err := s.ReverseRefund(ctx, untouched.ID, "refused", true)
	require.NoError(t, err)
	require.Equal(t, pix.RefundReversed, reversed.Status)
	require.EqualValues(t, 10_000-2_000, balance(t, s, "acc-1"), "only the untouched one came back")
	requireBalanced(t, s)
}

// The PSP's refusal is recorded, and stands, only while nothing says the
// PSP took the devolução (no rtr_id, no notice): the same fence as the
// reversal's on it. The first refusal's reason is kept.
func TestRefundRefusalRecordedWhileItStands(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	openAccount(t, s, "acc-1", 0)
	e2e := creditPIX(t, s, 1, "acc-1", 10_000)

	refused, err := returnPIX(s, e2e, 1_000, anyone)
	require.NoError(t, err)
	_, stands, err := s.StandingRefusal(ctx, refused.ID)
	require.NoError(t, err)
	require.False(t, stands, "no refusal recorded yet")
	recorded, err := s.MarkRefundRefused(ctx, refused.ID, "PixDevolucaoInvalida: fora do prazo")
	require.NoError(t, err)
	require.True(t, recorded)
	recorded, err = s.MarkRefundRefused(ctx, refused.ID, "another")
	require.NoError(t, err)
	require.True(t, recorded)
	reason, stands, err := s.StandingRefusal(ctx, refused.ID)
	require.NoError(t, err)
	require.True(t, stands)
	require.Equal(t, "PixDevolucaoInvalida: fora do prazo", reason, "the first refusal kept")

	// A notice since: the refusal no longer stands.
	_, err = s.NoteRefundOutcomes(ctx, []db.RefundNotice{{ID: refused.ID, EndToEndID: e2e, Status: "DEVOLVIDO"}})
	require.NoError(t, err)
	_, stands, err = s.StandingRefusal(ctx, refused.ID)
	require.NoError(t, err)
	require.False(t, stands)

	// An rtr_id first: never recorded.
	taken, err := returnPIX(s, e2e, 1_000, anyone)
	require.NoError(t, err)
	_, err = s.MarkRefundRequested(ctx, taken.ID, "D12345678202611291200000000000009")
	require.NoError(t, err)
	recorded, err = s.MarkRefundRefused(ctx, taken.ID, "refused")
	require.NoError(t, err)
	require.False(t, recorded, "the psp took it: the refusal does not stand")
	_, stands, err = s.StandingRefusal(ctx, taken.ID)
	require.NoError(t, err)
	require.False(t, stands)

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
	s := newStore(t)
	openAccount(t, s, "acc-1", 0)
	e2e := creditPIX(t, s, 1, "acc-1", 10_000)

	late, err := returnPIX(s, e2e, 1_000, anyone)
	require.NoError(t, err)
	first, err := s.MarkRefundAsked(ctx, late.ID) // attempt A, just before its PUT
	require.NoError(t, err)
	require.True(t, first)
	first, err = s.MarkRefundAsked(ctx, late.ID) // attempt B, just before its PUT (answer lost)
	require.NoError(t, err)
	require.False(t, first)
	recorded, err := s.MarkRefundRefused(ctx, late.ID, "PixDevolucaoInvalida") // A, late
	require.NoError(t, err)
	require.False(t, recorded, "recorded after a later ask, whose PUT may have made the devolução")
	_, stands, err := s.StandingRefusal(ctx, late.ID)
	require.NoError(t, err)
	require.False(t, stands)
	_, err = s.ReverseRefund(ctx, late.ID, "refused", true)
	require.ErrorIs(t, err, pix.ErrRefundFinal)
	got, err := s.GetRefund(ctx, late.ID)
	require.NoError(t, err)
	require.Equal(t, pix.RefundDebited, got.Status, "open, for the PSP's record or a human")

	// Recorded in time, then another ask (a run that read no standing
	// refusal just before it was recorded): it no longer stands.
	followed, err := returnPIX(s, e2e, 1_000, anyone)
	require.NoError(t, err)
	first, err = s.MarkRefundAsked(ctx, followed.ID)
	require.NoError(t, err)
	require.True(t, first)
	recorded, err = s.MarkRefundRefused(ctx, followed.ID, "PixDevolucaoInvalida")
	require.NoError(t, err)
	require.True(t, recorded, "the first PUT's refusal, the only PUT sent")
	_, stands, err = s.StandingRefusal(ctx, followed.ID)
	require.NoError(t, err)
	require.True(t, stands)
	_, err = s.MarkRefundAsked(ctx, followed.ID)
	require.NoError(t, err)
	_, stands, err = s.StandingRefusal(ctx, followed.ID)
	require.NoError(t, err)
	require.False(t, stands, "a PUT sent after the refusal may have made the devolução")
	_, err = s.ReverseRefund(ctx, followed.ID, "refused", true)
	require.ErrorIs(t, err, pix.ErrRefundFinal)

	require.EqualValues(t, 10_000-2_000, balance(t, s, "acc-1"), "neither reversed")
	requireBalanced(t, s)

	first, err = s.MarkRefundAsked(ctx, pix.NewRefundID())
	require.NoError(t, err)
	require.False(t, first, "no such refund: nothing asked")
}
