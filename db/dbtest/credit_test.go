package dbtest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/reconcile"
)

// CreditPIX leaves a PIX as the credit's path does: the inbox row done,
// the credit with its balance, its event, the books balanced; the account
// opened with its key, or an existing one credited on top of its balance.
func TestCreditPIXCreditsThroughTheCreditsPath(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)

	c := dbtest.CreditPIX(t, s, dbtest.PIX{})
	require.NotEmpty(t, c.AccountID)
	require.Len(t, c.EndToEndID, 32)
	require.EqualValues(t, 10_000, c.AmountCents)
	require.EqualValues(t, 10_000, c.BalanceAfterCents)
	credit, err := s.GetCredit(ctx, c.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, pix.StatusDone, credit.Status)
	require.Equal(t, &c.AccountID, credit.AccountID)
	require.NotNil(t, credit.CreditedAt)
	require.EqualValues(t, c.AmountCents, credit.AmountCents)
	var owner string
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT account_id FROM pix_keys WHERE key = $1`, c.Key).Scan(&owner))
	require.Equal(t, c.AccountID, owner)
	var events int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM outbox_events WHERE aggregate_id = $1`, c.EndToEndID).Scan(&events))
	require.Equal(t, 1, events, "the credit's event")

	_, err = s.CreateAccount(ctx, db.NewAccount{ID: "acc-1", OwnerName: "Maria", OpeningBalanceCents: 500})
	require.NoError(t, err)
	first := dbtest.CreditPIX(t, s, dbtest.PIX{AccountID: "acc-1", AmountCents: 1_000, OpeningBalanceCents: 99})
	second := dbtest.CreditPIX(t, s, dbtest.PIX{AccountID: "acc-1", EndToEndID: "E1234567820261129120000000000042", AmountCents: 2_000})
	require.EqualValues(t, 1_500, first.BalanceAfterCents, "an account that exists keeps its balance")
	require.EqualValues(t, 3_500, second.BalanceAfterCents)
	require.Equal(t, "E1234567820261129120000000000042", second.EndToEndID)
	require.Equal(t, first.Key, second.Key)
	account, err := s.GetAccount(ctx, "acc-1")
	require.NoError(t, err)
	require.EqualValues(t, 3_500, account.BalanceCents)
	r, err := reconcile.NewStore(s).Reconcile(ctx)
	require.NoError(t, err)
	require.True(t, r.Balanced(), "%+v", r)
}
