package db_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
)

// fillsTold records what the store's hooks are told (db.Store.InTx),
// and, at each call, what the first hold told of holds then, read on a
// connection of its own: what was committed.
type fillsTold struct {
	calls     [][]db.FilledHold
	committed []int64
}

func watchFills(t *testing.T, s *db.Store) *fillsTold {
	t.Helper()
	told := &fillsTold{}
	s.OnHoldsFilled(func(ctx context.Context, filled []db.FilledHold) {
		told.calls = append(told.calls, filled)
		h, err := s.GetHold(ctx, uuid.MustParse(filled[0].ID))
		require.NoError(t, err)
		told.committed = append(told.committed, h.AmountCents)
	})
	return told
}

// A credit that fills a hold tells the hooks of it after its commit (issue
// 37: the MED's run woken at once), with the hold, what the credit added
// and the credit as its source; a credit that fills nothing tells nothing.
func TestACreditTellsTheHooksOfTheHoldsItFilledAfterItsCommit(t *testing.T) {
	s, _, h := heldPIX(t, 7_000) // holds 3,000, lacks 7,000
	told := watchFills(t, s)

	second := dbtest.CreditNth(t, s, 2, "acc-1", 4_000)

	require.Equal(t, [][]db.FilledHold{{{ID: h.ID, Ref: "med:1", Kind: "med", AccountID: "acc-1", FilledCents: 4_000,
		Source: db.FillSource{Kind: db.FillByCredit, ID: second}}}}, told.calls)
	require.Equal(t, []int64{7_000}, told.committed, "told after the commit: the fill is there for whoever reads it")

	// Full: the next credits fill nothing, and tell nothing.
	dbtest.CreditNth(t, s, 3, "acc-1", 5_000)
	dbtest.CreditNth(t, s, 4, "acc-1", 1_000)
	require.Len(t, told.calls, 2)
	require.EqualValues(t, 3_000, told.calls[1][0].FilledCents)
	dbtest.RequireBooks(t, s)
}

// The holds another hold's release fills are told to the hooks after the
// releaser's transaction (db.Store.InTx) committed, as the sagas' stores
// run theirs (the block's release, the MED's own release or shrink).
func TestAReleaseNotesTheHoldsItFilled(t *testing.T) {
	s, blocked, h := blockedAndLacking(t)
	told := watchFills(t, s)

	ctx := context.Background()
	require.NoError(t, s.InTx(ctx, func(tx pgx.Tx) error {
		_, _, err := db.Release(ctx, tx, uuid.MustParse(blocked.ID), "DISAGREED")
		return err
	}))

	require.Equal(t, [][]db.FilledHold{{{ID: h.ID, Ref: "med:1", Kind: "med", AccountID: "acc-1", FilledCents: 2_000,
		Source: db.FillSource{Kind: db.FillByHoldRelease, ID: blocked.ID}}}}, told.calls)
	require.Equal(t, []int64{5_000}, told.committed)
	dbtest.RequireBooks(t, s)
}

// The store's transaction tells the hooks, and wakes what it was asked
// to (db.WakeOnCommit), only once it committed: a transaction that filled
// a hold and rolled back tells nothing and wakes nothing, and of a
// transaction that collided and ran again only the attempt that committed
// is told.
func TestTheStoresTransactionTellsTheHooksAfterItsCommitOnly(t *testing.T) {
	s, blocked, h := blockedAndLacking(t)
	told := watchFills(t, s)
	db.PendingWakes(s)
	ctx := context.Background()
	releaseAnd := func(then error) func(tx pgx.Tx) error {
		return func(tx pgx.Tx) error {
			db.WakeOnCommit(tx, db.OutboxChannel)
			filled, _, err := db.Release(ctx, tx, uuid.MustParse(blocked.ID), "DISAGREED")
			require.NoError(t, err)
			require.Equal(t, pix.HoldReleased, filled.Status)
			return then
		}
	}

	// Rolled back (a refusal after the fill): nothing told, nothing woken.
	refused := errors.New("refused after the fill")
	require.ErrorIs(t, s.InTx(ctx, releaseAnd(refused)), refused)
	require.Empty(t, told.calls)
	require.Empty(t, db.PendingWakes(s))
	requireHold(t, s, h.ID, 3_000, 5_000, pix.HoldActive)

	// A collision after the fill, then a commit: told once, of the attempt
	// that committed.
	attempts := 0
	require.NoError(t, s.InTx(ctx, func(tx pgx.Tx) error {
		attempts++
		if attempts == 1 {
			return releaseAnd(&pgconn.PgError{Code: "40001"})(tx)
		}
		return releaseAnd(nil)(tx)
	}))
	require.Equal(t, 2, attempts)
	require.Equal(t, [][]db.FilledHold{{{ID: h.ID, Ref: "med:1", Kind: "med", AccountID: "acc-1", FilledCents: 2_000,
		Source: db.FillSource{Kind: db.FillByHoldRelease, ID: blocked.ID}}}}, told.calls)
	require.Equal(t, []int64{5_000}, told.committed, "told after the commit")
	require.Equal(t, []string{db.OutboxChannel}, db.PendingWakes(s))
	dbtest.RequireBooks(t, s)
}

// A fill in a transaction that is not the store's (db.Store.InTx) is
// refused, nothing changed: its holders' wake-ups would be lost, so a path
// that forgets the store's transaction fails rather than leaving them
// asleep until their next look. WakeOnCommit outside it panics.
func TestAFillOutsideTheStoresTransactionIsRefused(t *testing.T) {
	s, blocked, h := blockedAndLacking(t)
	ctx := context.Background()

	err := db.InTx(ctx, s.Pool(), func(tx pgx.Tx) error {
		_, _, err := db.Release(ctx, tx, uuid.MustParse(blocked.ID), "DISAGREED")
		return err
	})
	require.ErrorContains(t, err, "outside Store.InTx")
	b, err := s.GetHold(ctx, uuid.MustParse(blocked.ID))
	require.NoError(t, err)
	require.Equal(t, pix.HoldActive, b.Status)
	requireHold(t, s, h.ID, 3_000, 5_000, pix.HoldActive)

	require.Panics(t, func() {
		_ = db.InTx(ctx, s.Pool(), func(tx pgx.Tx) error {
			db.WakeOnCommit(tx, db.OutboxChannel)
			return nil
		})
	})
	dbtest.RequireBooks(t, s)
}
