package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
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

// TestAMEDCutShortIsRaisedWhenItsPIXGetsRoomBack: of the PIX reported
// (spentPIX, 10,000 to acc-1), a part is taken (a block of it, or a
// devolução of it pending), the account maybe spends some, and then the
// MED's hold of all of it is made (med:1, a new hold): it fills to what
// the PIX has left, short of the rest; maybe its report then does
// something with it; then the part is freed (the block released, the
// devolução reversed): the hold is raised by the room freed (never past
// what a shrink left it to fill to) and filled by the money freed, which
// is not spendable while the MED of its PIX lacks it.
func TestAMEDCutShortIsRaisedWhenItsPIXGetsRoomBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		// What takes part of the PIX before the MED: a block of it, or a
		// devolução of it pending; and what the account spends then.
		block, devolucao, spent int64
		// then: what the MED's report does with its hold, before the part
		// is freed.
		then func(t *testing.T, s *db.Store, reported string, h pix.Hold)
		// short: the MED's hold before the part is freed: amount, fill_to,
		// fill_short; raised: its amount and fill_to after (short 0).
		short  [3]int64
		raised [2]int64
		// money: acc-1's balance and held after; lacks: why a debit of 1
		// is refused then, when it is.
		money [2]int64
		lacks string
		// later: a credit after, of which what is not the MED's (it is
		// full: its hold stays raised) is spendable: acc-1's money then.
		later      int64
		laterMoney [2]int64
		// more: the case's own checks, with what the part was (the
		// block's id).
		more func(t *testing.T, s *db.Store, h pix.Hold, freed string)
	}{
		{
			name:  "a block released: its room goes to the MED of its PIX, and its money fills it",
			block: 6_000, short: [3]int64{4_000, 4_000, 6_000}, raised: [2]int64{10_000, 10_000},
			money: [2]int64{10_000, 10_000}, lacks: "the block's money, while the MED of its PIX lacks it",
			later: 6_000, laterMoney: [2]int64{16_000, 10_000},
			more: func(t *testing.T, s *db.Store, h pix.Hold, freed string) {
				raised := eventsOf(t, s, "pix.hold.fill_raised") // each checked against its schema
				require.Len(t, raised, 1)
				require.Equal(t, []any{h.ID, float64(6_000), float64(10_000), float64(0), "hold_release", freed},
					[]any{raised[0]["hold_id"], raised[0]["raised_cents"], raised[0]["fill_to_cents"], raised[0]["fill_short_cents"],
						raised[0]["source_kind"], raised[0]["source_id"]})
			},
		},
		{
			name:  "a block spent first: its release raises the MED's target, and the account's later credits fill it",
			block: 6_000, spent: 4_000, short: [3]int64{0, 4_000, 6_000}, raised: [2]int64{6_000, 10_000},
			money: [2]int64{6_000, 6_000}, later: 5_000, laterMoney: [2]int64{11_000, 10_000},
		},
		{
			// The MED's hold is made all the same, filling to nothing (was
			// pix.ErrHoldExceedsCredit, which saga/med took for "nothing to
			// hold": the report had no hold at all).
			name:  "a block of the whole PIX leaves its MED a hold the release fills",
			block: 10_000, short: [3]int64{0, 0, 10_000}, raised: [2]int64{10_000, 10_000},
			money: [2]int64{10_000, 10_000}, lacks: "the reported PIX spendable once the block ends, while its MED report is open",
		},
		{
			name:      "a customer's devolução pending, then reversed (not made): its money back fills the MED of that PIX",
			devolucao: 3_000, short: [3]int64{7_000, 7_000, 3_000}, raised: [2]int64{10_000, 10_000},
			money: [2]int64{10_000, 10_000}, lacks: "the devolução's 3,000 back, while the MED of the same PIX lacks them",
		},
		{
			// The refund request asks 7,000: within its 4,000, but it could
			// be raised past; the rest of the block's money is spendable.
			name:  "a hold shrunk to what its holder still needs is never raised past it",
			block: 6_000, short: [3]int64{4_000, 4_000, 3_000}, raised: [2]int64{7_000, 7_000}, money: [2]int64{10_000, 7_000},
			then: func(t *testing.T, s *db.Store, _ string, h pix.Hold) {
				_, shrunk, err := shrink(s, h.ID, 7_000)
				require.NoError(t, err)
				require.True(t, shrunk)
			},
		},
		{
			// CapturePart lowers what it fills to by the part, not what it
			// is short.
			name:  "after a first part returned, the kept hold still fills to the rest when the block ends",
			block: 6_000, short: [3]int64{0, 0, 6_000}, raised: [2]int64{6_000, 6_000}, money: [2]int64{6_000, 6_000},
			then: func(t *testing.T, s *db.Store, reported string, h pix.Hold) {
				_, err := capturePart(s, reported, 4_000, h.ID) // the first part returned
				require.NoError(t, err)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, reported := spentPIX(t, 0)
			var free func()
			freed := ""
			if tc.block > 0 {
				blocked, _, err := hold(s, block("block:1", "acc-1", reported, tc.block))
				require.NoError(t, err)
				freed = blocked.ID
				free = func() {
					_, released, err := release(s, blocked.ID, "block 72h")
					require.NoError(t, err)
					require.True(t, released)
				}
			} else {
				r, err := refund(t, s, reported, tc.devolucao, anyone)
				require.NoError(t, err)
				free = func() {
					_, err := refundsaga.NewStore(s).ReverseRefund(t.Context(), r.ID, "NAO_REALIZADO", false)
					require.NoError(t, err)
				}
			}
			if tc.spent > 0 {
				debit(t, s, "acc-1", tc.spent)
			}
			h, created, err := hold(s, med("med:1", "acc-1", reported, 10_000)) // the MED reports all of the PIX
			require.NoError(t, err)
			require.True(t, created)
			if tc.then != nil {
				tc.then(t, s, reported, h)
			}
			requireHold(t, s, h.ID, tc.short[0], tc.short[1], pix.HoldActive)
			require.Equal(t, tc.short[2], fillShort(t, s, h.ID))

			free()
			requireHold(t, s, h.ID, tc.raised[0], tc.raised[1], pix.HoldActive)
			require.Zero(t, fillShort(t, s, h.ID))
			requireMoney(t, s, "acc-1", tc.money[0], tc.money[1])
			if tc.lacks != "" {
				require.ErrorIs(t, tryDebit(s, "acc-1", 1), pix.ErrInsufficientFunds, tc.lacks)
			}
			if tc.more != nil {
				tc.more(t, s, h, freed)
			}
			if tc.later > 0 {
				dbtest.CreditNth(t, s, 2, "acc-1", tc.later)
				requireHold(t, s, h.ID, 10_000, 10_000, pix.HoldActive)
				requireMoney(t, s, "acc-1", tc.laterMoney[0], tc.laterMoney[1])
				require.NoError(t, tryDebit(s, "acc-1", tc.laterMoney[0]-tc.laterMoney[1]))
			}
			dbtest.RequireBooks(t, s)
		})
	}
}

// A hold that does not fill still finds no room in a PIX wholly taken.
func TestAHoldThatDoesNotFillOfAPIXWhollyTakenIsRefused(t *testing.T) {
	s, reported := spentPIX(t, 0)
	_, _, err := hold(s, block("block:1", "acc-1", reported, 10_000))
	require.NoError(t, err)
	_, _, err = hold(s, block("block:2", "acc-1", reported, 1))
	require.ErrorIs(t, err, pix.ErrHoldExceedsCredit)
}

// TestTheRoomIsReadWhileItsPIXsBlockIsReleased: a call that reads the
// PIX's room, made while a block of the whole PIX is being released, is
// decided on the room the release frees (issue 37, attack review r2,
// HIGH): it locks the PIX's credit, then waits for the account, which the
// release (account lock only, no credit lock) holds, before it reads the
// room. Deterministic: the release commits only once the call waits for
// its backend (pg_blocking_pids), or the call was decided already, without
// the account's lock: the broken order.
//
//   - A MED's hold of the PIX (Hold): the release gives the room it frees
//     to the PIX's holds that fill that exist (RaiseFillTo), not to this
//     one, not made yet. With the room read before the account's lock, the
//     MED's hold was made with the room as it was before the release (0):
//     filling to 0, short 10,000, for good, and the PIX's money spendable.
//   - A devolução of all the PIX (RecordRefund, the same read): with the
//     room read before the account's lock, it was refused
//     pix.ErrRefundExceedsCredit for room the release had freed by the time
//     it was decided.
func TestTheRoomIsReadWhileItsPIXsBlockIsReleased(t *testing.T) {
	for _, tc := range []struct {
		name string
		// call reads the PIX's room; check checks what it did once the
		// release committed.
		call func(s *db.Store, reported string) (check func(*testing.T), err error)
	}{
		{
			name: "a MED's hold fills to all the PIX",
			call: func(s *db.Store, reported string) (func(*testing.T), error) {
				h, _, err := hold(s, med("med:1", "acc-1", reported, 10_000))
				return func(t *testing.T) {
					require.NoError(t, err)
					a := account(t, s, "acc-1")
					t.Logf("MED hold: amount %d fill_to %d short %d; account balance %d held %d available %d",
						h.AmountCents, *h.FillToCents, fillShort(t, s, h.ID), a.BalanceCents, a.HeldCents, a.AvailableCents)
					// The PIX is wholly free: its MED must hold (or fill to) all of it.
					require.Equal(t, int64(10_000), *h.FillToCents, "the MED's hold fills to what its PIX, wholly free, has")
					require.ErrorIs(t, tryDebit(s, "acc-1", 1), pix.ErrInsufficientFunds, "the PIX's money, while its MED lacks it")
				}, err
			},
		},
		{
			name: "a devolução is decided on the room freed",
			call: func(s *db.Store, reported string) (func(*testing.T), error) {
				_, err := captureRefund(s, reported, 10_000, uuid.Nil)
				return func(t *testing.T) {
					require.NoError(t, err, "the PIX is wholly free once the block is released")
					require.Equal(t, int64(0), account(t, s, "acc-1").BalanceCents)
				}, err
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, reported := spentPIX(t, 0)
			blocked, _, err := hold(s, block("block:1", "acc-1", reported, 10_000))
			require.NoError(t, err)

			// The block's release, not yet committed: it holds the account's lock.
			rel, err := s.Pool().Begin(ctx)
			require.NoError(t, err)
			defer rel.Rollback(ctx) //nolint:errcheck
			var relPID int
			require.NoError(t, rel.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&relPID))
			_, released, err := db.Release(ctx, db.NotingFills(rel), uuid.MustParse(blocked.ID), "block 72h")
			require.NoError(t, err)
			require.True(t, released)

			type result struct {
				check func(*testing.T)
				err   error
			}
			done := make(chan result, 1)
			go func() {
				check, err := tc.call(s, reported)
				done <- result{check, err}
			}()
			// It waits for the release's backend (the account's lock), or it
			// was decided already, without it: the broken order.
			var r result
			decided := false
			require.Eventually(t, func() bool {
				select {
				case r = <-done:
					decided = true
					return true
				default:
				}
				var n int
				_ = s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`, relPID).Scan(&n)
				return n > 0
			}, 10*time.Second, 10*time.Millisecond)
			require.False(t, decided, "decided before the release committed, without the account's lock: %v", r.err)
			require.NoError(t, rel.Commit(ctx))
			r = <-done
			r.check(t)
		})
	}
}
