package transfer_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/transfer"
)

// A MED hold that fills from later credits fills from every money that
// comes back to the account, a transfer refund too (docs/design.md, I11;
// found by the attack review as TestAttackTransferRefundDoesNotFillTheMEDHold):
// the fraudster moves the reported PIX out (a transfer), the MED hold is
// made with nothing available (amount 0, fill_to 10_000), the outgoing
// transfer is rejected and refunded: the money back is held, not
// spendable again. A refund run again fills nothing more (one fill per
// hold and source).
func TestTransferRefundFillsTheMEDHold(t *testing.T) {
	ctx := context.Background()
	ds := dbtest.New(t)
	s := transfer.NewStore(ds)
	p := dbtest.CreditPIX(t, ds, dbtest.PIX{AccountID: "acc-1", AmountCents: 10_000})

	tr := debit(t, s, "acc-1", 10_000) // the fraudster moves it out
	require.EqualValues(t, 0, dbtest.Balance(t, s.Store, "acc-1"))

	var h pix.Hold
	require.NoError(t, db.InTx(ctx, ds.Pool(), func(tx pgx.Tx) error {
		var err error
		h, _, err = db.Hold(ctx, tx, db.NewHold{Ref: "med:1", AccountID: "acc-1", EndToEndID: p.EndToEndID, AmountCents: 10_000,
			UpTo: true, FillFromCredits: true, Kind: "med"})
		return err
	}))
	require.EqualValues(t, 0, h.AmountCents)
	var told [][]db.FilledHold // the hooks, told after the commit (db.Store.InTx)
	ds.OnHoldsFilled(func(_ context.Context, filled []db.FilledHold) { told = append(told, filled) })

	_, err := s.RefundTransfer(ctx, uuid.MustParse(tr.ID), "receiver rejected")
	require.NoError(t, err)
	require.Equal(t, [][]db.FilledHold{{{ID: h.ID, Ref: "med:1", Kind: "med", AccountID: "acc-1", FilledCents: 10_000,
		Source: db.FillSource{Kind: db.FillByTransferRefund, ID: tr.ID}}}}, told)

	got, err := ds.GetHold(ctx, uuid.MustParse(h.ID))
	require.NoError(t, err)
	acc, err := ds.GetAccount(ctx, "acc-1")
	require.NoError(t, err)
	t.Logf("after the refund: balance %d held %d; MED hold holds %d of %d", acc.BalanceCents, acc.HeldCents, got.AmountCents, *got.FillToCents)
	require.EqualValues(t, 10_000, got.AmountCents,
		"the reported money came back to the account, yet the MED hold that lacks it did not take it: it is spendable again")
	require.EqualValues(t, 10_000, acc.HeldCents)

	_, err = s.RefundTransfer(ctx, uuid.MustParse(tr.ID), "receiver rejected")
	require.NoError(t, err)
	var fills, events int
	var source string
	require.NoError(t, ds.Pool().QueryRow(ctx, `SELECT count(*), min(source_id) FROM pix_hold_fills
		WHERE hold_id = $1 AND source_kind = 'transfer_refund'`, h.ID).Scan(&fills, &source))
	require.NoError(t, ds.Pool().QueryRow(ctx, `SELECT count(*) FROM outbox_events
		WHERE aggregate_id = $1 AND event_type = 'pix.hold.filled' AND payload->>'source_id' = $2`, h.ID, tr.ID).Scan(&events))
	require.Equal(t, 1, fills, "the refund fills the hold once")
	require.Len(t, told, 1, "the refund run again fills, and tells, nothing")
	require.Equal(t, tr.ID, source)
	require.Equal(t, 1, events)
	got, err = ds.GetHold(ctx, uuid.MustParse(h.ID))
	require.NoError(t, err)
	require.EqualValues(t, 10_000, got.AmountCents)
	acc, err = ds.GetAccount(ctx, "acc-1")
	require.NoError(t, err)
	require.EqualValues(t, 10_000, acc.BalanceCents)
	require.EqualValues(t, 10_000, acc.HeldCents)
}
