package db_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/reconcile"
	refundsaga "github.com/pixbank/pix/saga/refund"
)

// A hold shrunk in place, captured in part and kept, and given back a
// reversed devolução's part (issue 37): the money its holder still needs
// never stops being held (db.Shrink, db.NewRefund.KeepHold,
// db.RestoreHold). The races are in holds_race_test.go.

// shrink runs db.Shrink in a transaction of its own.
func shrink(s *db.Store, id string, to int64) (out pix.Hold, shrunk bool, err error) {
	err = s.InTx(context.Background(), func(tx pgx.Tx) error {
		out, shrunk, err = db.Shrink(context.Background(), tx, uuid.MustParse(id), to, "held for more than is returned")
		return err
	})
	return out, shrunk, err
}

// capturePart records a devolução of the PIX capturing what the hold id
// holds (CaptureAll), or amount of it, the hold kept (KeepHold).
func capturePart(s *db.Store, e2e string, amount int64, id string) (out pix.Refund, err error) {
	err = db.InTx(context.Background(), s.Pool(), func(tx pgx.Tx) error {
		out, err = db.RecordRefund(context.Background(), tx, db.NewRefund{ID: pix.NewRefundID(), Hold: uuid.MustParse(id),
			CaptureAll: amount == 0, KeepHold: true,
			RefundRequest: pix.RefundRequest{EndToEndID: e2e, AmountCents: amount, Reason: "MED: devolução"}}, nil, "test-saga")
		return err
	})
	return out, err
}

// eventsOf are the types of the outbox's events of type typ, each checked
// against its schema, with their payloads.
func eventsOf(t *testing.T, s *db.Store, typ string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range outboxRows(t, s) {
		if e.Type == typ {
			out = append(out, e.Payload)
		}
	}
	return out
}

func TestShrinkKeepsWhatItKeepsHeld(t *testing.T) {
	s, _, h := heldPIX(t, 0)
	// A hold that fills made after it, lacking: a hold made anew now would
	// take nothing available (the older lacks first); what the shrink frees
	// fills it first.
	other, _, err := hold(s, med("other", "acc-1", "", 5_000))
	require.NoError(t, err)
	requireHold(t, s, other.ID, 0, 5_000, pix.HoldActive)
	requireMoney(t, s, "acc-1", 10_000, 10_000)

	out, shrunk, err := shrink(s, h.ID, 6_000)
	require.NoError(t, err)
	require.True(t, shrunk)
	require.Equal(t, h.ID, out.ID, "in place: the same hold")
	requireHold(t, s, h.ID, 6_000, 6_000, pix.HoldActive)
	requireHold(t, s, other.ID, 4_000, 5_000, pix.HoldActive)
	requireMoney(t, s, "acc-1", 10_000, 10_000)
	require.ErrorIs(t, tryDebit(s, "acc-1", 1), pix.ErrInsufficientFunds, "what it keeps stays held, what it freed fills the other")

	// Asked again (a retry whose first answer was lost): nothing changes,
	// no second event.
	_, shrunk, err = shrink(s, h.ID, 6_000)
	require.NoError(t, err)
	require.False(t, shrunk)
	_, shrunk, err = shrink(s, h.ID, 8_000)
	require.NoError(t, err)
	require.False(t, shrunk, "a shrink never grows a hold")
	requireHold(t, s, h.ID, 6_000, 6_000, pix.HoldActive)
	ev := eventsOf(t, s, db.EventHoldShrunk)
	require.Len(t, ev, 1)
	require.EqualValues(t, 4_000, ev[0]["released_cents"])
	require.EqualValues(t, 6_000, ev[0]["held_after_cents"])
	require.EqualValues(t, 4_000, ev[0]["available_after_cents"])

	// A hold that fills shrunk below what it holds: the rest, no hold
	// lacking, is spendable.
	_, shrunk, err = shrink(s, other.ID, 3_000)
	require.NoError(t, err)
	require.True(t, shrunk)
	requireHold(t, s, other.ID, 3_000, 3_000, pix.HoldActive)
	requireMoney(t, s, "acc-1", 10_000, 9_000)

	// A hold that does not fill is shrunk, not to nothing (a release); a
	// hold of a whole amount is not shrunk (a release).
	up, _, err := hold(s, db.NewHold{Ref: "up", AccountID: "acc-1", AmountCents: 1_000, UpTo: true, Kind: "med"})
	require.NoError(t, err)
	var invalid *pix.ValidationError
	_, _, err = shrink(s, up.ID, 0)
	require.ErrorAs(t, err, &invalid)
	out, shrunk, err = shrink(s, up.ID, 400)
	require.NoError(t, err)
	require.True(t, shrunk)
	require.Equal(t, int64(400), out.AmountCents)
	require.Nil(t, out.FillToCents, "it still does not fill")
	b, _, err := hold(s, block("block:1", "acc-1", "", 500))
	require.NoError(t, err)
	_, _, err = shrink(s, b.ID, 400)
	require.ErrorAs(t, err, &invalid)

	// An ended hold is returned as it is.
	_, _, err = release(s, up.ID, "")
	require.NoError(t, err)
	out, shrunk, err = shrink(s, up.ID, 100)
	require.NoError(t, err)
	require.False(t, shrunk)
	require.Equal(t, pix.HoldReleased, out.Status)
	dbtest.RequireBooks(t, s)
}

func TestAPartCapturedKeepsTheHoldAndItsReversalHoldsItAgain(t *testing.T) {
	ctx := context.Background()
	s, reported, h := heldPIX(t, 4_000)
	requireHold(t, s, h.ID, 6_000, 10_000, pix.HoldActive)

	// Refused: more than it holds; a hold that does not fill.
	_, err := capturePart(s, reported, 6_001, h.ID)
	require.ErrorIs(t, err, pix.ErrHoldNotCapturable)

	// A part, then what it holds: the hold stays active, filling to less.
	r1, err := capturePart(s, reported, 1_000, h.ID)
	require.NoError(t, err)
	requireHold(t, s, h.ID, 5_000, 9_000, pix.HoldActive)
	r2, err := capturePart(s, reported, 0, h.ID)
	require.NoError(t, err)
	require.Equal(t, int64(5_000), r2.AmountCents, "CaptureAll: what it holds")
	requireHold(t, s, h.ID, 0, 4_000, pix.HoldActive)
	requireMoney(t, s, "acc-1", 0, 0)
	// The PIX's rest is still the hold's: no other devolução takes it.
	_, err = refund(t, s, reported, 1, anyone)
	require.ErrorIs(t, err, pix.ErrRefundExceedsCredit)

	// A hold made after it, lacking: the old way (the reversal's money
	// filling the account's holds in order) would give it what the first
	// hold's devolução returned.
	other, _, err := hold(s, med("other", "acc-1", "", 50_000))
	require.NoError(t, err)
	dbtest.CreditNth(t, s, 2, "acc-1", 3_000)
	requireHold(t, s, h.ID, 3_000, 4_000, pix.HoldActive)

	// The devolução of 5,000 not made: its money is held again by the
	// hold, in the reversal's transaction; none of it is available.
	_, err = refundsaga.NewStore(s).ReverseRefund(ctx, r2.ID, "NAO_REALIZADO", false)
	require.NoError(t, err)
	requireHold(t, s, h.ID, 8_000, 9_000, pix.HoldActive)
	requireHold(t, s, other.ID, 0, 50_000, pix.HoldActive)
	requireMoney(t, s, "acc-1", 8_000, 8_000)
	ev := eventsOf(t, s, db.EventHoldRestored)
	require.Len(t, ev, 1)
	require.EqualValues(t, 5_000, ev[0]["restored_cents"])
	require.Equal(t, r2.ID, ev[0]["refund_id"])
	require.Len(t, eventsOf(t, s, db.EventHoldPartCaptured), 2)

	// Once: the part is restored, a second call restores nothing.
	require.NoError(t, db.InTx(ctx, s.Pool(), func(tx pgx.Tx) error {
		restored, err := db.RestoreHold(ctx, tx, r2.ID)
		require.Equal(t, int64(0), restored)
		return err
	}))

	// A part whose hold ended before its reversal: the money back fills
	// the account's holds that fill, as any reversal's (and the released
	// hold's 8,000 filled the one that lacks first).
	_, _, err = release(s, h.ID, "ended")
	require.NoError(t, err)
	requireHold(t, s, other.ID, 8_000, 50_000, pix.HoldActive)
	_, err = refundsaga.NewStore(s).ReverseRefund(ctx, r1.ID, "NAO_REALIZADO", false)
	require.NoError(t, err)
	requireHold(t, s, other.ID, 9_000, 50_000, pix.HoldActive)
	requireMoney(t, s, "acc-1", 9_000, 9_000)
	dbtest.RequireBooks(t, s)

	// A hold that does not fill is captured whole only.
	_, _, err = release(s, other.ID, "")
	require.NoError(t, err)
	b, _, err := hold(s, block("block:1", "acc-1", "", 100))
	require.NoError(t, err)
	_, err = capturePart(s, reported, 100, b.ID)
	require.ErrorIs(t, err, pix.ErrHoldNotCapturable)
}

func shrinkCall(id string, to int64) moneyCall {
	return func(ctx context.Context, tx pgx.Tx) error {
		_, _, err := db.Shrink(ctx, tx, uuid.MustParse(id), to, "")
		return err
	}
}

// A shrink and a debit at once, in both orders: the debit never spends
// what the hold keeps (available = balance - held >= 0, held = the active
// holds), and spends what it released only once it is released.
func TestRaceAShrinkAndADebit(t *testing.T) {
	t.Run("the shrink first", func(t *testing.T) {
		s, _, h := heldPIX(t, 0)
		err1, err2 := race(t, s, shrinkCall(h.ID, 6_000), transferCall("acc-1", 4_001))
		require.NoError(t, err1)
		require.ErrorIs(t, err2, pix.ErrInsufficientFunds, "what the hold keeps is never available")
		requireMoney(t, s, "acc-1", 10_000, 6_000)
		err1, err2 = race(t, s, shrinkCall(h.ID, 6_000), transferCall("acc-1", 4_000))
		require.NoError(t, err1)
		require.NoError(t, err2, "what it released is")
		requireMoney(t, s, "acc-1", 6_000, 6_000)
		dbtest.RequireBooks(t, s)
	})
	t.Run("the debit first", func(t *testing.T) {
		s, _, h := heldPIX(t, 0)
		err1, err2 := race(t, s, transferCall("acc-1", 1), shrinkCall(h.ID, 6_000))
		require.ErrorIs(t, err1, pix.ErrInsufficientFunds, "all of it held")
		require.NoError(t, err2)
		requireMoney(t, s, "acc-1", 10_000, 6_000)
		dbtest.RequireBooks(t, s)
	})
}

// legacyHold makes h, of a PIX, the shape of a MED's hold made before holds
// filled (between the report's store and the fills, issue 37: fill_to_cents
// NULL, nothing short), in SQL: db.Hold makes no such MED any more.
func legacyHold(t *testing.T, s *db.Store, h pix.Hold) {
	t.Helper()
	tag, err := s.Pool().Exec(context.Background(),
		`UPDATE pix_holds SET fill_to_cents = NULL, fill_short_cents = 0 WHERE id = $1 AND amount_cents > 0`, h.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
}

// A MED's hold that does not fill (made before holds filled: issue 37,
// attack review LOW5), made one that fills to what its holder still needs
// (db.MakeFilling), is captured in part and kept; the devolução not made
// gives its money back into it, held, never available. Captured whole, as
// a hold that does not fill was, it ended, and the reversal's money came
// back available. Books exact throughout: balance = opening + movements,
// held = the active holds, available = balance - held >= 0.
func TestALegacyHoldMadeFillingIsRestoredHeld(t *testing.T) {
	ctx := context.Background()
	s, reported := spentPIX(t, 7_000) // 3,000 left of the PIX's 10,000
	h, _, err := hold(s, db.NewHold{Ref: "med:1", AccountID: "acc-1", EndToEndID: reported, AmountCents: 10_000, UpTo: true,
		Kind: "med", Reason: "notificação de infração"})
	require.NoError(t, err)
	require.EqualValues(t, 3_000, h.AmountCents)
	legacyHold(t, s, h)
	makeFilling := func() (out pix.Hold, made bool) {
		require.NoError(t, db.InTx(ctx, s.Pool(), func(tx pgx.Tx) error {
			out, made, err = db.MakeFilling(ctx, tx, uuid.MustParse(h.ID), 10_000, "med: returned in parts")
			return err
		}))
		return out, made
	}
	made, changed := makeFilling()
	require.True(t, changed)
	require.EqualValues(t, 3_000, made.AmountCents, "it holds what it held")
	require.EqualValues(t, 10_000, *made.FillToCents, "the PIX's room: all of it")
	requireMoney(t, s, "acc-1", 3_000, 3_000)
	again, changed := makeFilling()
	require.False(t, changed, "a hold that fills already")
	require.Equal(t, made, again)
	require.Len(t, eventsOf(t, s, db.EventHoldMadeFilling), 1)

	part, err := capturePart(s, reported, 0, h.ID)
	require.NoError(t, err)
	require.EqualValues(t, 3_000, part.AmountCents)
	requireMoney(t, s, "acc-1", 0, 0)
	_, err = refundsaga.NewStore(s).ReverseRefund(ctx, part.ID, "NAO_REALIZADO", false)
	require.NoError(t, err)
	requireMoney(t, s, "acc-1", 3_000, 3_000)
	kept, err := s.GetHold(ctx, uuid.MustParse(h.ID))
	require.NoError(t, err)
	require.Equal(t, pix.HoldActive, kept.Status)
	require.EqualValues(t, 3_000, kept.AmountCents)
	require.EqualValues(t, 10_000, *kept.FillToCents)
	dbtest.CreditNth(t, s, 2, "acc-1", 2_000)
	requireMoney(t, s, "acc-1", 5_000, 5_000) // the later credit fills it
	rec, err := reconcile.NewStore(s).Reconcile(ctx)
	require.NoError(t, err)
	require.True(t, rec.Balanced(), "%+v", rec)
}

// A hold that does not fill, made one that fills (db.MakeFilling), takes
// what the account has available up to what it fills to: the money that
// came in since it was made, which a hold that filled would have taken
// (attack review r5 MED-3; before, it stayed available, spendable), with
// its pix.hold.filled (source hold_made_filling) and its pix_hold_fills
// row; no more than its holder's need.
func TestALegacyHoldMadeFillingTakesTheMoneyCameInSince(t *testing.T) {
	for _, c := range []struct {
		name       string
		need, want int64
	}{
		{name: "all it lacks", need: 10_000, want: 8_000},
		{name: "up to its need", need: 4_000, want: 4_000},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			s, reported := spentPIX(t, 7_000)
			h, _, err := hold(s, db.NewHold{Ref: "med:1", AccountID: "acc-1", EndToEndID: reported, AmountCents: 10_000, UpTo: true,
				Kind: "med", Reason: "notificação de infração"})
			require.NoError(t, err)
			require.EqualValues(t, 3_000, h.AmountCents)
			legacyHold(t, s, h)
			dbtest.CreditNth(t, s, 2, "acc-1", 5_000) // not filled into the hold that does not fill
			requireMoney(t, s, "acc-1", 8_000, 3_000)
			var made pix.Hold
			require.NoError(t, s.InTx(ctx, func(tx pgx.Tx) error { // a fill's wake-ups noted
				made, _, err = db.MakeFilling(ctx, tx, uuid.MustParse(h.ID), c.need, "med: returned in parts")
				return err
			}))
			require.EqualValues(t, c.want, made.AmountCents)
			require.EqualValues(t, c.need, *made.FillToCents)
			requireMoney(t, s, "acc-1", 8_000, c.want)
			kept, err := s.GetHold(ctx, uuid.MustParse(h.ID))
			require.NoError(t, err)
			require.EqualValues(t, c.want, kept.AmountCents)
			filled := eventsOf(t, s, db.EventHoldFilled)
			require.Len(t, filled, 1)
			require.Equal(t, db.FillByMadeFilling, filled[0]["source_kind"])
			require.Equal(t, h.ID, filled[0]["source_id"])
			require.EqualValues(t, c.want-3_000, filled[0]["filled_cents"])
			var n int
			require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM pix_hold_fills WHERE hold_id = $1 AND source_kind = $2`,
				h.ID, db.FillByMadeFilling).Scan(&n))
			require.Equal(t, 1, n)
			rec, err := reconcile.NewStore(s).Reconcile(ctx)
			require.NoError(t, err)
			require.True(t, rec.Balanced(), "%+v", rec)
		})
	}
}
