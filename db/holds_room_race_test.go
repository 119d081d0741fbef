package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/pix"
)

// A MED's hold of a PIX made while a block of the PIX is being released
// fills to all the PIX (issue 37, attack review r2, HIGH): Hold locks the
// PIX's credit, then waits for the account, which the release (account
// lock only, no credit lock) holds; the release gives the room it frees to
// the PIX's holds that fill that exist (RaiseFillTo), not to this one, not
// made yet. With the room read before the account's lock, the MED's hold
// was made with the room as it was before the release (0): filling to 0,
// short 10,000, for good, and the PIX's money spendable. Deterministic:
// the release commits only once the MED's hold waits for its backend
// (pg_blocking_pids).
func TestAMEDHoldMadeWhileItsPIXsBlockIsReleasedFillsToAllThePIX(t *testing.T) {
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

	// The MED's hold of the same PIX: it reads the room (0: the block's),
	// then waits for the account.
	type result struct {
		h   pix.Hold
		err error
	}
	done := make(chan result, 1)
	go func() {
		h, _, err := hold(s, med("med:1", "acc-1", reported, 10_000))
		done <- result{h, err}
	}()
	require.Eventually(t, func() bool {
		var n int
		_ = s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`, relPID).Scan(&n)
		return n > 0
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, rel.Commit(ctx))
	r := <-done
	require.NoError(t, r.err)

	a := account(t, s, "acc-1")
	t.Logf("MED hold: amount %d fill_to %d short %d; account balance %d held %d available %d",
		r.h.AmountCents, *r.h.FillToCents, fillShort(t, s, r.h.ID), a.BalanceCents, a.HeldCents, a.AvailableCents)
	// The PIX is wholly free: its MED must hold (or fill to) all of it.
	require.Equal(t, int64(10_000), *r.h.FillToCents, "the MED's hold fills to what its PIX, wholly free, has")
	require.ErrorIs(t, tryDebit(s, "acc-1", 1), pix.ErrInsufficientFunds, "the PIX's money, while its MED lacks it")
}

// A devolução of a PIX asked while a block of the PIX is being released is
// decided on the room the release frees (issue 37, attack review r2, the
// same read in RecordRefund): it locks the PIX's credit, then the account
// (the release's) before it reads the room. With the room read before the
// account's lock, it was refused pix.ErrRefundExceedsCredit for room the
// release had freed by the time it was decided.
func TestADevolucaoAskedWhileItsPIXsBlockIsReleasedIsDecidedOnTheRoomFreed(t *testing.T) {
	ctx := context.Background()
	s, reported := spentPIX(t, 0)
	blocked, _, err := hold(s, block("block:1", "acc-1", reported, 10_000))
	require.NoError(t, err)

	rel, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer rel.Rollback(ctx) //nolint:errcheck
	var relPID int
	require.NoError(t, rel.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&relPID))
	_, released, err := db.Release(ctx, db.NotingFills(rel), uuid.MustParse(blocked.ID), "block 72h")
	require.NoError(t, err)
	require.True(t, released)

	done := make(chan error, 1)
	go func() {
		_, err := captureRefund(s, reported, 10_000, uuid.Nil)
		done <- err
	}()
	// It waits for the release's backend (the account's lock), or it was
	// decided already, without it: the broken order.
	var early error
	decided := false
	require.Eventually(t, func() bool {
		select {
		case early = <-done:
			decided = true
			return true
		default:
		}
		var n int
		_ = s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`, relPID).Scan(&n)
		return n > 0
	}, 10*time.Second, 10*time.Millisecond)
	require.False(t, decided, "decided before the release committed, without the account's lock: %v", early)
	require.NoError(t, rel.Commit(ctx))
	require.NoError(t, <-done, "the PIX is wholly free once the block is released")
	require.Equal(t, int64(0), account(t, s, "acc-1").BalanceCents)
}
