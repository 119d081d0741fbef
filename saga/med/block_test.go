package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/med"
	refundsaga "github.com/pixbank/pix/saga/refund"
)

// A cautionary block of the reported PIX, active when the report's run
// holds, takes part of the PIX: the report's hold fills to what the block
// left. Released at its 72 hours, the block's room and money go to the
// report's hold (db.RaiseFillTo, in the release's transaction), and the
// report returns all it was asked (issue 37, attack review B, HIGH-1:
// before, the report held and returned the 4,000 the block left, then sat
// in awaiting_credit holding nothing for 90 days while 12,000 were
// available).

// blockPIX holds cents of the PIX of c as a cautionary block does.
func (f *fixture) blockPIX(account, e2e string, cents int64) pix.Hold {
	f.t.Helper()
	var blk pix.Hold
	require.NoError(f.t, db.InTx(context.Background(), f.s.Pool(), func(tx pgx.Tx) error {
		var err error
		blk, _, err = db.Hold(context.Background(), tx, db.NewHold{Ref: "block:" + e2e, AccountID: account, EndToEndID: e2e,
			AmountCents: cents, Kind: "cautionary_block", Reason: "suspeita"})
		return err
	}))
	return blk
}

// releaseBlock ends the block blk as its 72 hours do.
func (f *fixture) releaseBlock(blk pix.Hold) {
	f.t.Helper()
	require.NoError(f.t, f.s.InTx(context.Background(), func(tx pgx.Tx) error {
		_, _, err := db.Release(context.Background(), tx, uuid.MustParse(blk.ID), "block expired")
		return err
	}))
}

// agreedAndClosed takes the report r, held, to its close AGREED.
func (f *fixture) agreedAndClosed(r med.Report, in dict.InfractionReport) med.Report {
	f.t.Helper()
	ctx := context.Background()
	in.Status, in.LastModified = dict.ReportAcknowledged, in.LastModified.Add(time.Minute)
	r = f.step(f.store.Acknowledged(ctx, r, in))
	f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "fraude confirmada", "operator-1"))
	r, err := f.store.Get(ctx, r.ID)
	require.NoError(f.t, err)
	return f.step(f.store.Closed(ctx, r, dict.InfractionReport{}))
}

func TestABlockOfTheReportedPIXReleasedIsHeldAndReturnedByTheReport(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(10_000, 0)
	blk := f.blockPIX(c.AccountID, c.EndToEndID, 6_000)
	in := report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
	r := f.step(f.store.Hold(ctx, f.intake(in)))
	require.Equal(t, int64(4_000), r.HeldCents, "the block holds 6,000 of the PIX")
	r = f.agreedAndClosed(r, in)

	f.releaseBlock(blk)              // the block ends at its 72 hours
	f.creditMore(c.AccountID, 6_000) // more money comes in: spendable, the report's hold is full
	f.requireMoney(c.AccountID, 16_000, 10_000)

	r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	r = f.step(f.store.Return(ctx, r))
	require.Equal(t, "returning", r.Status)
	_, err := refundsaga.NewStore(f.s).MarkRefundReturned(ctx, *r.RefundID, "D12345678202612061200abcdefghijk")
	require.NoError(t, err)
	r = f.step(f.store.Settle(ctx, r))
	require.Equal(t, int64(10_000), r.ReturnedCents, "the whole PIX returned in one part")
	f.requireMoney(c.AccountID, 6_000, 0)
}

// A block of the whole reported PIX: the report's hold is made all the
// same, filling to nothing (before, db.Hold refused it and holdMore took
// that for "nothing to hold": the report had no hold at all, and the
// block's release made the whole PIX spendable); the block's release
// fills it.
func TestABlockOfTheWholeReportedPIXLeavesTheReportAHoldTheReleaseFills(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(10_000, 0)
	blk := f.blockPIX(c.AccountID, c.EndToEndID, 10_000)
	in := report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
	r := f.step(f.store.Hold(ctx, f.intake(in)))
	require.NotNil(t, r.HoldID, "the report has a hold")
	require.Zero(t, r.HeldCents)
	r = f.agreedAndClosed(r, in)
	f.releaseBlock(blk)
	f.requireMoney(c.AccountID, 10_000, 10_000)

	r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	r = f.step(f.store.Return(ctx, r))
	require.Equal(t, "returning", r.Status)
	f.requireMoney(c.AccountID, 0, 0)
}
