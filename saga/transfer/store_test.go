package transfer_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/transfer"
)

func render(t pix.Transfer) ([]byte, error) { return json.Marshal(t) }

func newTransfer(account string, amount int64) db.NewTransfer {
	return db.NewTransfer{ID: uuid.New(), EndToEndID: pix.NewEndToEndID("12345678", time.Now()),
		TransferRequest: pix.TransferRequest{AccountID: account, AmountCents: amount, PixKey: "maria@example.com"}}
}

// newStore is the transfer's store over a schema of the test's own.
func newStore(t *testing.T) *transfer.Store { return transfer.NewStore(dbtest.New(t)) }

// debitedStore is the transfer's store over a schema of the test's own,
// with acc-1 (opened with 10,000) debited one transfer of 2,500.
func debitedStore(t *testing.T) (*transfer.Store, pix.Transfer) {
	t.Helper()
	s := newStore(t)
	dbtest.OpenAccount(t, s.Store, "acc-1", 10_000)
	return s, debit(t, s, "acc-1", 2_500)
}

// debit runs one transfer under a fresh key.
func debit(t *testing.T, s *transfer.Store, account string, amount int64) pix.Transfer {
	t.Helper()
	tr, err := s.CreateTransfer(context.Background(), *dbtest.Reserve(t, s.Store, "test-caller"), newTransfer(account, amount), render)
	require.NoError(t, err)
	return tr
}

func TestCreateTransferRefusalsChangeNothing(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	dbtest.OpenAccount(t, s.Store, "acc-1", 1_000)
	require.NoError(t, s.CloseAccount(ctx, "acc-1"))
	dbtest.OpenAccount(t, s.Store, "acc-2", 1_000)
	for _, tc := range []struct {
		account string
		amount  int64
		want    error
	}{
		{"acc-2", 1_001, pix.ErrInsufficientFunds},
		{"acc-none", 1, pix.ErrAccountNotFound},
		{"acc-1", 1, pix.ErrAccountClosed},
	} {
		_, err := s.CreateTransfer(ctx, *dbtest.Reserve(t, s.Store, "test-caller"), newTransfer(tc.account, tc.amount), render)
		require.ErrorIs(t, err, tc.want)
	}
	require.EqualValues(t, 1_000, dbtest.Balance(t, s.Store, "acc-2"))
	var transfers int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM pix_transfers`).Scan(&transfers))
	require.Zero(t, transfers)
}

func TestRefundHappensExactlyOnce(t *testing.T) {
	ctx := context.Background()
	s, tr := debitedStore(t)
	id := uuid.MustParse(tr.ID)

	due, err := s.TransferQueue().Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []dbtest.ClaimState{{Key: tr.ID}}, dbtest.ClaimStates(due), "a new transfer is due for its saga")
	require.Equal(t, tr.EndToEndID, due[0].EndToEndID)
	require.Equal(t, "acc-1", *due[0].AccountID)
	require.EqualValues(t, 2_500, due[0].AmountCents)
	require.Equal(t, pix.TransferDebited, due[0].Status)
	require.Equal(t, map[string]any{"payee_pix_key": tr.PixKey}, due[0].Memo)

	_, err = s.MarkTransferSubmitted(ctx, id)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() {
			_, err := s.RefundTransfer(ctx, id, "receiver account closed")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, 10_000, dbtest.Balance(t, s.Store, "acc-1"), "the balance is restored exactly, once")
	var refunds int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM pix_transfer_refunds WHERE transfer_id = $1`, id).Scan(&refunds))
	require.Equal(t, 1, refunds)
	got, err := s.GetTransfer(ctx, id)
	require.NoError(t, err)
	require.Equal(t, pix.TransferRefunded, got.Status)
	require.Equal(t, "receiver account closed", *got.FailureReason)
	require.NotNil(t, got.SubmittedAt)

	_, err = s.SettleTransfer(ctx, id)
	require.ErrorIs(t, err, pix.ErrTransferFinal, "a refunded transfer is never settled")
	due, err = s.TransferQueue().Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, due, "a final transfer is not due")
}

func TestSettledTransferIsNeverRefunded(t *testing.T) {
	ctx := context.Background()
	s, tr := debitedStore(t)
	id := uuid.MustParse(tr.ID)
	settled, err := s.SettleTransfer(ctx, id)
	require.NoError(t, err)
	require.Equal(t, pix.TransferSettled, settled.Status)
	_, err = s.RefundTransfer(ctx, id, "late rejection")
	require.ErrorIs(t, err, pix.ErrTransferFinal)
	require.EqualValues(t, 7_500, dbtest.Balance(t, s.Store, "acc-1"))
	again, err := s.SettleTransfer(ctx, id)
	require.NoError(t, err, "settling twice is a no-op")
	require.Equal(t, settled.SettledAt, again.SettledAt)
}

// The age the metrics read (pix_transfer_oldest_open_age_seconds): that of
// the oldest transfer debited and neither settled nor refunded, 0 once
// none is open.
func TestOldestOpenTransferAge(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	dbtest.OpenAccount(t, s.Store, "acc-1", 10_000)
	age, err := s.OldestOpenTransferAge(ctx)
	require.NoError(t, err)
	require.Zero(t, age, "no transfer")
	settled, refunded := debit(t, s, "acc-1", 1_000), debit(t, s, "acc-1", 1_000)
	time.Sleep(20 * time.Millisecond)
	age, err = s.OldestOpenTransferAge(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, age, 20*time.Millisecond, "two open")
	_, err = s.SettleTransfer(ctx, uuid.MustParse(settled.ID))
	require.NoError(t, err)
	_, err = s.RefundTransfer(ctx, uuid.MustParse(refunded.ID), "rejected")
	require.NoError(t, err)
	age, err = s.OldestOpenTransferAge(ctx)
	require.NoError(t, err)
	require.Zero(t, age, "both final")
}

// The statements that return a transfer (the core's hand-over,
// RecordDebited, and this saga's own) return the same columns, in the
// order db.ScanTransfer reads them.
func TestTransferStatementsReturnOneColumnList(t *testing.T) {
	columns := regexp.MustCompile(`SELECT (id::text, end_to_end_id, [^;]*?, refunded_at) FROM`)
	want := map[string]bool{"transfers.GetTransfer": true, "transfers.RecordDebited": true,
		"transfers.GetTransferByEndToEndID": true, "transfers.LockTransfer": true}
	var first string
	for _, st := range db.Statements() {
		if !want[st.Name] {
			continue
		}
		delete(want, st.Name)
		m := columns.FindStringSubmatch(strings.Join(strings.Fields(withoutComments(st.SQL)), " "))
		require.NotNil(t, m, st.Name)
		if first == "" {
			first = m[1]
		}
		require.Equal(t, first, m[1], st.Name)
	}
	require.Empty(t, want, "statements not bound")
	require.Len(t, strings.Split(first, ", "), 13, "db.ScanTransfer reads 13 columns")
}

// withoutComments is sql without its comment lines.
func withoutComments(sql string) string {
	var b strings.Builder
	for line := range strings.Lines(sql) {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line)
		}
	}
	return b.String()
}
