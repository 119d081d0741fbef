package refund_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
)

// A devolução reversed brings its money back to the account, and a MED
// hold that fills takes it as it takes a PIX credited (docs/design.md,
// I11), in the reversal's transaction: else the money the MED waits for
// would be spendable again. A reversal run again fills nothing more (one
// fill per hold and source).
func TestReversalFillsTheMEDHold(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	dbtest.OpenAccount(t, s.Store, "acc-1", 0)
	returned := creditPIX(t, s, 1, "acc-1", 10_000)
	reported := creditPIX(t, s, 2, "acc-1", 5_000)

	devolucao, err := returnPIX(t, s, returned, 10_000, anyone)
	require.NoError(t, err)
	var med db.NewHold
	require.NoError(t, db.InTx(ctx, s.Pool(), func(tx pgx.Tx) error {
		// What is left is held by another (a block of the account): the MED
		// hold starts with nothing.
		if _, _, err := db.Hold(ctx, tx, db.NewHold{Ref: "block:1", AccountID: "acc-1", AmountCents: 5_000, Kind: "cautionary_block"}); err != nil {
			return err
		}
		med = db.NewHold{Ref: "med:1", AccountID: "acc-1", EndToEndID: reported, AmountCents: 5_000, UpTo: true,
			FillFromCredits: true, Kind: "med"}
		h, _, err := db.Hold(ctx, tx, med)
		require.Zero(t, h.AmountCents)
		return err
	}))

	var told [][]db.FilledHold // the hooks, told after the commit (db.Store.InTx)
	s.OnHoldsFilled(func(_ context.Context, filled []db.FilledHold) { told = append(told, filled) })
	for range 2 { // the second is a retry whose first try committed
		_, err = s.ReverseRefund(ctx, devolucao.ID, "conta encerrada", false)
		require.NoError(t, err)
	}
	acc, err := s.GetAccount(ctx, "acc-1")
	require.NoError(t, err)
	require.EqualValues(t, 15_000, acc.BalanceCents)
	require.EqualValues(t, 10_000, acc.HeldCents, "the block's 5,000 and the MED's, filled by the reversal")
	var holdID string
	var amount int64
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT id::text, amount_cents FROM pix_holds WHERE ref = 'med:1'`).Scan(&holdID, &amount))
	require.EqualValues(t, 5_000, amount)
	var fills, events int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM pix_hold_fills
		WHERE hold_id = $1 AND source_kind = 'refund_reversal' AND source_id = $2 AND amount_cents = 5000`, uuid.MustParse(holdID), devolucao.ID).Scan(&fills))
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM outbox_events WHERE aggregate_id = $1
		AND event_type = 'pix.hold.filled' AND payload->>'source_kind' = 'refund_reversal' AND payload->>'source_id' = $2`,
		holdID, devolucao.ID).Scan(&events))
	require.Equal(t, 1, fills)
	require.Equal(t, 1, events)
	require.Equal(t, [][]db.FilledHold{{{ID: holdID, Ref: "med:1", Kind: "med", AccountID: "acc-1", FilledCents: 5_000,
		Source: db.FillSource{Kind: db.FillByRefundReversal, ID: devolucao.ID}}}}, told, "told once, the retry filling nothing")
	dbtest.RequireBooks(t, s.Store)
}
