package db_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/durable/rows"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/reconcile"
	refundsaga "github.com/pixbank/pix/saga/refund"
)

func renderRefund(r pix.Refund) ([]byte, error) { return json.Marshal(r) }

func anyone(string) bool { return true }

// refund runs one refund of the PIX under a fresh key.
func refund(t *testing.T, s *db.Store, e2e string, amount int64, mayRefund func(string) bool) (pix.Refund, error) {
	t.Helper()
	return refundsaga.NewStore(s).CreateRefund(context.Background(), *dbtest.Reserve(t, s, "test-caller"), db.NewRefund{ID: pix.NewRefundID(),
		RefundRequest: pix.RefundRequest{EndToEndID: e2e, AmountCents: amount, Reason: "devolução"}}, mayRefund, renderRefund)
}

func TestRefundRefusals(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	dbtest.OpenAccount(t, s, "acc-2", 50_000)
	e2e := dbtest.CreditNth(t, s, 1, "acc-1", 10_000)

	_, err := refund(t, s, dbtest.E2EID(99), 100, anyone)
	require.ErrorIs(t, err, pix.ErrPixNotCredited, "no credit")
	_, err = refund(t, s, e2e, 100, func(account string) bool { return account == "acc-2" })
	require.ErrorIs(t, err, pix.ErrPixNotCredited, "another customer's PIX answers like a missing one")

	// Spent: the balance no longer covers it.
	debit(t, s, "acc-1", 9_500)
	_, err = refund(t, s, e2e, 600, anyone)
	require.ErrorIs(t, err, pix.ErrInsufficientFunds)

	// Pending in the inbox, not credited yet.
	_, err = s.Receive(ctx, dbtest.Notice(dbtest.E2EID(2), "acc-2", 100))
	require.NoError(t, err)
	_, err = refund(t, s, dbtest.E2EID(2), 100, anyone)
	require.ErrorIs(t, err, pix.ErrPixNotCredited)

	// Past the window.
	_, err = s.Pool().Exec(ctx, `UPDATE pix_credits SET credited_at = now() - interval '90 days 1 minute', received_at = now() - interval '90 days 1 minute' WHERE end_to_end_id = $1`, e2e)
	require.NoError(t, err)
	_, err = refund(t, s, e2e, 100, anyone)
	require.ErrorIs(t, err, pix.ErrRefundWindowClosed)

	var n int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM pix_refunds`).Scan(&n))
	require.Zero(t, n, "a refusal changes nothing")
	dbtest.RequireBooks(t, s)
}

// Two of everything at once: refunds of one PIX never sum past its credit,
// and a refund is reversed once.
func TestRefundsConcurrently(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 1_000_000)
	e2e := dbtest.CreditNth(t, s, 1, "acc-1", 10_000)

	const n = 12
	refunds := make([]pix.Refund, n)
	results := atOnce(n, func(i int) (err error) {
		refunds[i], err = refund(t, s, e2e, 2_000, anyone)
		return err
	})()
	require.Equal(t, 5, winners(t, results, pix.ErrRefundExceedsCredit), "5 x 2000 = the credit")

	var reversing pix.Refund
	for _, r := range refunds {
		if r.ID != "" {
			reversing = r
			break
		}
	}
	errs := atOnce(n, func(int) error {
		_, err := refundsaga.NewStore(s).ReverseRefund(ctx, reversing.ID, "não realizado", false)
		return err
	})()
	for _, err := range errs {
		require.NoError(t, err)
	}
	var reversals int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM pix_refund_reversals`).Scan(&reversals))
	require.Equal(t, 1, reversals)
	require.EqualValues(t, 1_000_000+10_000-4*2_000, dbtest.Balance(t, s, "acc-1"))
	dbtest.RequireBooks(t, s)
}

func TestNoteRefundOutcomes(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	e2e := dbtest.CreditNth(t, s, 1, "acc-1", 10_000)
	open, err := refund(t, s, e2e, 1_000, anyone)
	require.NoError(t, err)
	closed, err := refund(t, s, e2e, 1_000, anyone)
	require.NoError(t, err)
	_, err = refundsaga.NewStore(s).MarkRefundReturned(ctx, closed.ID, "")
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `UPDATE pix_refunds SET dispatch_due_at = now() + interval '1 hour' WHERE id = $1`, open.ID)
	require.NoError(t, err)

	noted, err := s.NoteRefundOutcomes(ctx, []db.RefundNotice{
		{ID: open.ID, EndToEndID: e2e, Status: "DEVOLVIDO"},
		{ID: open.ID, EndToEndID: e2e, Status: "DEVOLVIDO"},
		{ID: closed.ID, EndToEndID: e2e, Status: "NAO_REALIZADO"},           // final already
		{ID: open.ID + "x", EndToEndID: e2e, Status: "DEVOLVIDO"},           // no such refund
		{ID: open.ID, EndToEndID: dbtest.E2EID(2), Status: "NAO_REALIZADO"}, // another PIX's id
	})
	require.NoError(t, err)
	require.Equal(t, []string{open.ID}, noted.Open)
	require.Equal(t, []db.RefundNotice{{ID: closed.ID, EndToEndID: e2e, Status: "NAO_REALIZADO"}}, noted.Contradicted,
		"returned, then the PSP says not made: reported")
	rec, err := reconcile.NewStore(s).Reconcile(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{closed.ID}, rec.RefundContradictions)
	require.False(t, rec.Balanced())

	due, err := s.RefundQueue().Claim(ctx, 10, 0)
	require.NoError(t, err)
	require.Len(t, due, 1, "the noted refund is due at once")
	require.Equal(t, open.ID, due[0].Key)
	require.Equal(t, "DEVOLVIDO", due[0].Memo["psp_notice"])
	require.Equal(t, e2e, due[0].EndToEndID)

	// A notice that arrives after the claim is not overwritten by the
	// claim's record: the refund stays due, to be signalled.
	_, err = s.NoteRefundOutcomes(ctx, []db.RefundNotice{{ID: open.ID, EndToEndID: e2e, Status: "NAO_REALIZADO"}})
	require.NoError(t, err)
	require.NoError(t, s.RefundQueue().MarkDispatched(ctx, nil, due, rows.Recheck{After: time.Hour}))
	again, err := s.RefundQueue().Claim(ctx, 10, 0)
	require.NoError(t, err)
	require.Len(t, again, 1, "still due")
	require.Equal(t, "NAO_REALIZADO", again[0].Memo["psp_notice"])

	// Once signalled, a recheck does not signal it again.
	require.NoError(t, s.RefundQueue().MarkDispatched(ctx, nil, again, rows.Recheck{}))
	later, err := s.RefundQueue().Claim(ctx, 10, 0)
	require.NoError(t, err)
	require.Len(t, later, 1)
	require.Nil(t, later[0].Memo["psp_notice"])
}

// The window counts from when the PIX was received, not from its credit
// (a failed PIX re-driven days later).
func TestRefundWindowCountsFromReceipt(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	e2e := dbtest.CreditNth(t, s, 1, "acc-1", 10_000)
	_, err := s.Pool().Exec(ctx, `UPDATE pix_credits SET received_at = now() - interval '91 days' WHERE end_to_end_id = $1`, e2e)
	require.NoError(t, err)
	_, err = refund(t, s, e2e, 100, anyone)
	require.ErrorIs(t, err, pix.ErrRefundWindowClosed, "credited today, received 91 days ago")
}

// A notice a final refund holds already (the catch-up lists the same PIX
// at every run for its overlap) writes nothing: the row keeps its version,
// and no contradiction is reported again; another notice is recorded.
func TestNoteRefundOutcomesUnchangedWritesNothing(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	e2e := dbtest.CreditNth(t, s, 1, "acc-1", 10_000)
	closed, err := refund(t, s, e2e, 1_000, anyone)
	require.NoError(t, err)
	_, err = refundsaga.NewStore(s).MarkRefundReturned(ctx, closed.ID, "")
	require.NoError(t, err)
	version := func() (xmin, ctid string) {
		t.Helper()
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT xmin::text, ctid::text FROM pix_refunds WHERE id = $1`, closed.ID).Scan(&xmin, &ctid))
		return xmin, ctid
	}
	noted, err := s.NoteRefundOutcomes(ctx, []db.RefundNotice{{ID: closed.ID, EndToEndID: e2e, Status: "DEVOLVIDO"}})
	require.NoError(t, err)
	require.Empty(t, noted.Contradicted)
	xmin, ctid := version()
	for range 3 {
		noted, err = s.NoteRefundOutcomes(ctx, []db.RefundNotice{{ID: closed.ID, EndToEndID: e2e, Status: "DEVOLVIDO"}})
		require.NoError(t, err)
		require.Equal(t, db.NotedRefunds{}, noted)
		x, c := version()
		require.Equal(t, []string{xmin, ctid}, []string{x, c}, "the same notice again wrote the row")
	}
	noted, err = s.NoteRefundOutcomes(ctx, []db.RefundNotice{{ID: closed.ID, EndToEndID: e2e, Status: "NAO_REALIZADO"}})
	require.NoError(t, err)
	require.Equal(t, []db.RefundNotice{{ID: closed.ID, EndToEndID: e2e, Status: "NAO_REALIZADO"}}, noted.Contradicted, "a new notice is recorded, and reported")
	x, _ := version()
	require.NotEqual(t, xmin, x)
}

// The catch-up lists every PIX again at each run for its overlap: an open
// refund whose PIX the PSP's record shows DEVOLVIDO is noted once, not
// counted and made due again at every listing of the notice it holds (I12;
// found by an attack review).
func TestOpenRefundNoticeListedAgainIsCountedOnce(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	e2e := dbtest.CreditNth(t, s, 1, "acc-1", 10_000)
	open, err := refund(t, s, e2e, 1_000, anyone)
	require.NoError(t, err)
	for range 3 { // three catch-up runs list the PIX within their overlap
		_, err := s.NoteRefundOutcomes(ctx, []db.RefundNotice{{ID: open.ID, EndToEndID: e2e, Status: "DEVOLVIDO"}})
		require.NoError(t, err)
	}
	var notices int
	require.NoError(t, s.Pool().QueryRow(ctx, "SELECT notices FROM pix_refunds WHERE id = $1", open.ID).Scan(&notices))
	require.Equal(t, 1, notices, "one notice of the PSP, listed three times, counted %d times", notices)
}
