package db_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	refundsaga "github.com/pixbank/pix/saga/refund"
)

// A hold that fills made while something else takes part of its PIX (a
// cautionary block of it, a devolução of it pending) fills to what the
// PIX has left; what the PIX's room cut short is raised when the PIX gets
// room back (db.RaiseFillTo, in the release's, shrink's or reversal's
// transaction, before the money freed fills anything), so the money that
// comes back fills the MED of that very PIX, never spendable while it
// lacks it (issue 37, attack review B, HIGH-1: before, fill_to was fixed
// at creation and the money freed was spendable).

// fillShort is what the PIX's room cut short of what the hold id fills
// to (pix_holds.fill_short_cents).
func fillShort(t *testing.T, s *db.Store, id string) int64 {
	t.Helper()
	var short int64
	require.NoError(t, s.Pool().QueryRow(context.Background(), `SELECT fill_short_cents FROM pix_holds WHERE id = $1`, id).Scan(&short))
	return short
}

func TestABlockReleasedRaisesTheMEDOfItsPIXAndFillsIt(t *testing.T) {
	s, reported := spentPIX(t, 0) // acc-1 received the PIX reported, 10,000
	blocked, _, err := hold(s, block("block:1", "acc-1", reported, 6_000))
	require.NoError(t, err)
	h, _, err := hold(s, med("med:1", "acc-1", reported, 10_000)) // the MED reports all of the PIX
	require.NoError(t, err)
	requireHold(t, s, h.ID, 4_000, 4_000, pix.HoldActive) // the block's 6,000 are the block's
	require.Equal(t, int64(6_000), fillShort(t, s, h.ID))

	_, released, err := release(s, blocked.ID, "block 72h")
	require.NoError(t, err)
	require.True(t, released)
	// The block's room goes to the MED of its PIX, and its money fills it.
	requireHold(t, s, h.ID, 10_000, 10_000, pix.HoldActive)
	require.Zero(t, fillShort(t, s, h.ID))
	a := account(t, s, "acc-1")
	require.Equal(t, [3]int64{10_000, 10_000, 0}, [3]int64{a.BalanceCents, a.HeldCents, a.AvailableCents})
	require.ErrorIs(t, tryDebit(s, "acc-1", 1), pix.ErrInsufficientFunds, "the block's money, while the MED of its PIX lacks it")
	raised := eventsOf(t, s, "pix.hold.fill_raised") // each checked against its schema
	require.Len(t, raised, 1)
	require.Equal(t, []any{h.ID, float64(6_000), float64(10_000), float64(0), "hold_release", blocked.ID},
		[]any{raised[0]["hold_id"], raised[0]["raised_cents"], raised[0]["fill_to_cents"], raised[0]["fill_short_cents"],
			raised[0]["source_kind"], raised[0]["source_id"]})
	creditPIX(t, s, 2, "acc-1", 6_000) // a later credit: the MED is full, the credit spendable
	requireHold(t, s, h.ID, 10_000, 10_000, pix.HoldActive)
	require.NoError(t, tryDebit(s, "acc-1", 6_000))
	dbtest.RequireBooks(t, s)
}

// The block spent first: its release raises the MED's target, and the
// account's later credits fill it.
func TestABlockReleasedRaisesTheMEDOfItsPIXForLaterCredits(t *testing.T) {
	s, reported := spentPIX(t, 0)
	blocked, _, err := hold(s, block("block:1", "acc-1", reported, 6_000))
	require.NoError(t, err)
	debit(t, s, "acc-1", 4_000) // the 4,000 not blocked spent
	h, _, err := hold(s, med("med:1", "acc-1", reported, 10_000))
	require.NoError(t, err)
	requireHold(t, s, h.ID, 0, 4_000, pix.HoldActive)
	_, _, err = release(s, blocked.ID, "block 72h")
	require.NoError(t, err)
	requireHold(t, s, h.ID, 6_000, 10_000, pix.HoldActive)
	creditPIX(t, s, 2, "acc-1", 5_000)
	requireHold(t, s, h.ID, 10_000, 10_000, pix.HoldActive)
	a := account(t, s, "acc-1")
	require.Equal(t, [3]int64{11_000, 10_000, 1_000}, [3]int64{a.BalanceCents, a.HeldCents, a.AvailableCents})
	dbtest.RequireBooks(t, s)
}

// A block of the whole PIX: the MED's hold is made all the same, filling
// to nothing (was pix.ErrHoldExceedsCredit, which saga/med took for
// "nothing to hold": the report had no hold at all); the block's release
// raises it to the PIX and fills it.
func TestABlockOfTheWholePIXLeavesItsMEDAHoldTheReleaseFills(t *testing.T) {
	s, reported := spentPIX(t, 0)
	blocked, _, err := hold(s, block("block:1", "acc-1", reported, 10_000))
	require.NoError(t, err)
	h, created, err := hold(s, med("med:1", "acc-1", reported, 10_000))
	require.NoError(t, err)
	require.True(t, created)
	requireHold(t, s, h.ID, 0, 0, pix.HoldActive)
	require.Equal(t, int64(10_000), fillShort(t, s, h.ID))
	_, _, err = release(s, blocked.ID, "block 72h")
	require.NoError(t, err)
	requireHold(t, s, h.ID, 10_000, 10_000, pix.HoldActive)
	require.ErrorIs(t, tryDebit(s, "acc-1", 1), pix.ErrInsufficientFunds,
		"the reported PIX spendable once the block ends, while its MED report is open")
	dbtest.RequireBooks(t, s)
}

// A hold that does not fill still finds no room in a PIX wholly taken.
func TestAHoldThatDoesNotFillOfAPIXWhollyTakenIsRefused(t *testing.T) {
	s, reported := spentPIX(t, 0)
	_, _, err := hold(s, block("block:1", "acc-1", reported, 10_000))
	require.NoError(t, err)
	_, _, err = hold(s, block("block:2", "acc-1", reported, 1))
	require.ErrorIs(t, err, pix.ErrHoldExceedsCredit)
}

// A customer's devolução of part of the PIX, pending when the MED's hold
// is made, and then reversed (not made): its money back fills the MED of
// that PIX.
func TestAReversedDevolucaoRaisesTheMEDOfItsPIXAndFillsIt(t *testing.T) {
	s, reported := spentPIX(t, 0)
	r, err := refund(t, s, reported, 3_000, anyone)
	require.NoError(t, err)
	h, _, err := hold(s, med("med:1", "acc-1", reported, 10_000))
	require.NoError(t, err)
	requireHold(t, s, h.ID, 7_000, 7_000, pix.HoldActive)
	_, err = refundsaga.NewStore(s).ReverseRefund(t.Context(), r.ID, "NAO_REALIZADO", false)
	require.NoError(t, err)
	requireHold(t, s, h.ID, 10_000, 10_000, pix.HoldActive)
	require.ErrorIs(t, tryDebit(s, "acc-1", 1), pix.ErrInsufficientFunds,
		"the devolução's 3,000 back, while the MED of the same PIX lacks them")
	dbtest.RequireBooks(t, s)
}

// A hold shrunk to what its holder still needs is never raised past it:
// the block's release raises it to its shrunk target only, the rest of
// the block's money is spendable.
func TestAShrunkHoldIsRaisedNoFurtherThanItWasShrunkTo(t *testing.T) {
	s, reported := spentPIX(t, 0)
	blocked, _, err := hold(s, block("block:1", "acc-1", reported, 6_000))
	require.NoError(t, err)
	h, _, err := hold(s, med("med:1", "acc-1", reported, 10_000))
	require.NoError(t, err)
	_, shrunk, err := shrink(s, h.ID, 7_000) // the refund request asks 7,000: within its 4,000, but it could be raised past
	require.NoError(t, err)
	require.True(t, shrunk)
	requireHold(t, s, h.ID, 4_000, 4_000, pix.HoldActive)
	require.Equal(t, int64(3_000), fillShort(t, s, h.ID))
	_, _, err = release(s, blocked.ID, "block 72h")
	require.NoError(t, err)
	requireHold(t, s, h.ID, 7_000, 7_000, pix.HoldActive)
	a := account(t, s, "acc-1")
	require.Equal(t, [3]int64{10_000, 7_000, 3_000}, [3]int64{a.BalanceCents, a.HeldCents, a.AvailableCents})
	dbtest.RequireBooks(t, s)
}

// After a first part returned, the kept hold still fills to the rest: the
// block's release raises it (CapturePart lowers what it fills to by the
// part, not what it is short).
func TestAKeptHoldIsRaisedForTheRestWhenTheBlockEnds(t *testing.T) {
	s, reported := spentPIX(t, 0)
	blocked, _, err := hold(s, block("block:1", "acc-1", reported, 6_000))
	require.NoError(t, err)
	h, _, err := hold(s, med("med:1", "acc-1", reported, 10_000))
	require.NoError(t, err)
	_, err = capturePart(s, reported, 4_000, h.ID) // the first part returned
	require.NoError(t, err)
	requireHold(t, s, h.ID, 0, 0, pix.HoldActive)
	require.Equal(t, int64(6_000), fillShort(t, s, h.ID))
	_, _, err = release(s, blocked.ID, "block 72h")
	require.NoError(t, err)
	requireHold(t, s, h.ID, 6_000, 6_000, pix.HoldActive)
	a := account(t, s, "acc-1")
	require.Equal(t, [3]int64{6_000, 6_000, 0}, [3]int64{a.BalanceCents, a.HeldCents, a.AvailableCents})
	dbtest.RequireBooks(t, s)
}
