package db_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
)

// fillsTold records what the store's hooks are told (db.Store.HoldsFilled),
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

	second := creditPIX(t, s, 2, "acc-1", 4_000)

	require.Equal(t, [][]db.FilledHold{{{ID: h.ID, Ref: "med:1", Kind: "med", AccountID: "acc-1", FilledCents: 4_000,
		Source: db.FillSource{Kind: db.FillByCredit, ID: second}}}}, told.calls)
	require.Equal(t, []int64{7_000}, told.committed, "told after the commit: the fill is there for whoever reads it")

	// Full: the next credits fill nothing, and tell nothing.
	creditPIX(t, s, 3, "acc-1", 5_000)
	creditPIX(t, s, 4, "acc-1", 1_000)
	require.Len(t, told.calls, 2)
	require.EqualValues(t, 3_000, told.calls[1][0].FilledCents)
	dbtest.RequireBooks(t, s)
}

// The holds another hold's release fills are noted for the hooks in the
// releaser's transaction (db.CollectFills), as the sagas' stores hand them
// after their commits (the block's release, the MED's own release or
// shrink).
func TestAReleaseNotesTheHoldsItFilled(t *testing.T) {
	s, reported := spentPIX(t, 0)
	blocked, _, err := hold(s, block("block:1", "acc-1", "", 7_000))
	require.NoError(t, err)
	h, _, err := hold(s, med("med:1", "acc-1", reported, 5_000)) // holds 3,000, lacks 2,000
	require.NoError(t, err)
	told := watchFills(t, s)

	ctx := context.Background()
	var fills *db.Fills
	require.NoError(t, db.InTx(ctx, s.Pool(), func(tx pgx.Tx) error {
		tx, fills = db.CollectFills(tx)
		_, _, err := db.Release(ctx, tx, uuid.MustParse(blocked.ID), "DISAGREED")
		return err
	}))
	s.HoldsFilled(ctx, fills)

	require.Equal(t, [][]db.FilledHold{{{ID: h.ID, Ref: "med:1", Kind: "med", AccountID: "acc-1", FilledCents: 2_000,
		Source: db.FillSource{Kind: db.FillByHoldRelease, ID: blocked.ID}}}}, told.calls)
	require.Equal(t, []int64{5_000}, told.committed)
	dbtest.RequireBooks(t, s)
}
