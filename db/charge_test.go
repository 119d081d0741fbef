package db_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
)

// Defect 2: a charge is concluded only by a PIX credited to the charge's
// own account with the amount the charge expects. Any other PIX naming
// the txid is still credited, and why the charge stayed open is recorded
// with the credit.
func TestChargeIsConcludedOnlyByItsOwnerAndItsAmount(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-key", 0)
	dbtest.OpenAccount(t, s, "acc-charge", 0)
	_, err := s.CreatePixKey(ctx, db.NewPixKey{Key: "maria@example.com", KeyType: "email", AccountID: "acc-key"})
	require.NoError(t, err)
	const txid = "txcharge0000000000000000001"
	_, err = s.CreateCharge(ctx, db.NewCharge{TxID: txid, AccountID: "acc-charge", AmountExpectedCents: 100_000})
	require.NoError(t, err)

	cases := []struct {
		n       pix.Notification
		account string
		outcome string
	}{
		// Credited through the key to another account than the charge's.
		{apiPixNote(dbtest.E2EID(1), "maria@example.com", txid, 100_000), "acc-key", db.ChargeOtherAccount},
		// The charge's account, but one centavo for a 1,000.00 charge.
		{apiPixNote(dbtest.E2EID(2), "", txid, 1), "acc-charge", db.ChargeAmountMismatch},
		// The right account and amount: concluded.
		{apiPixNote(dbtest.E2EID(3), "", txid, 100_000), "acc-charge", db.ChargeConcluded},
		// Paid again: credited, the charge was no longer open.
		{apiPixNote(dbtest.E2EID(4), "", txid, 100_000), "acc-charge", db.ChargeNotOpen},
	}
	for i, c := range cases {
		_, err := s.Receive(ctx, c.n)
		require.NoError(t, err)
		out, err := s.Credit(ctx, c.n.EndToEndID, 1, 1)
		require.NoError(t, err, "case %d", i)
		require.Equal(t, c.account, out.AccountID, "case %d", i)
		require.True(t, out.Credited, "case %d: the PIX is credited whatever the charge", i)
		require.Equal(t, c.outcome, out.ChargeOutcome, "case %d", i)

		got, err := s.GetCredit(ctx, c.n.EndToEndID)
		require.NoError(t, err)
		require.NotNil(t, got.Charge, "case %d", i)
		require.Equal(t, pix.ChargeView{TxID: txid, Outcome: c.outcome}, *got.Charge, "case %d", i)

		status, err := s.ChargeStatus(ctx, txid)
		require.NoError(t, err)
		want := "ATIVA"
		if i >= 2 {
			want = "CONCLUIDA"
		}
		require.Equal(t, want, status, "case %d", i)
	}
	require.EqualValues(t, 100_000, dbtest.Balance(t, s, "acc-key"))
	require.EqualValues(t, 200_001, dbtest.Balance(t, s, "acc-charge"))
}
