package sagaexample_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/db/internal/sagaexample"
	"github.com/pixbank/pix/internal/pix"
)

// A saga's store built outside package db on its exported core alone: a
// keyed create debits and records in one transaction, its key replays the
// answer, a refusal changes nothing, and the saga's declared queue serves
// the row to its dispatcher.
func TestASagasStoreLivesWithTheSaga(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	_, err := s.Pool().Exec(ctx, sagaexample.Schema)
	require.NoError(t, err)
	_, err = s.CreateAccount(ctx, db.NewAccount{ID: "acc-1", OwnerName: "Maria", OpeningBalanceCents: 1000})
	require.NoError(t, err)
	payouts := sagaexample.NewStore(s)
	keys := db.KeyPolicy{LockFor: time.Minute, KeepFor: time.Hour}
	render := func(p sagaexample.Payout) ([]byte, error) { return json.Marshal(p) }

	key := uuid.New()
	res, _, err := s.ReserveKey(ctx, "caller", key, "hash", keys)
	require.NoError(t, err)
	created, err := payouts.CreatePayout(ctx, *res, uuid.New(), "acc-1", 300, render)
	require.NoError(t, err)
	require.Equal(t, int64(700), created.BalanceAfterCents)

	got, err := payouts.GetPayout(ctx, created.ID)
	require.NoError(t, err)
	require.Equal(t, created.AmountCents, got.AmountCents)
	require.True(t, created.CreatedAt.Equal(got.CreatedAt), "the row's time is the debit's")
	account, err := s.GetAccount(ctx, "acc-1")
	require.NoError(t, err)
	require.Equal(t, int64(700), account.BalanceCents)
	require.True(t, account.UpdatedAt.Equal(got.CreatedAt), "the row's time is the debit's")

	// The key answers again what the transaction recorded.
	_, replay, err := s.ReserveKey(ctx, "caller", key, "hash", keys)
	require.NoError(t, err)
	require.NotNil(t, replay)
	body, err := render(created)
	require.NoError(t, err)
	require.Equal(t, 201, replay.StatusCode)
	require.JSONEq(t, string(body), string(replay.Body))

	// A refusal changes nothing: no debit, no row, the key free.
	refusedKey := uuid.New()
	res, _, err = s.ReserveKey(ctx, "caller", refusedKey, "hash", keys)
	require.NoError(t, err)
	refusedID := uuid.New()
	_, err = payouts.CreatePayout(ctx, *res, refusedID, "acc-1", 701, render)
	require.ErrorIs(t, err, pix.ErrInsufficientFunds)
	_, err = payouts.GetPayout(ctx, refusedID)
	require.ErrorIs(t, err, sagaexample.ErrPayoutNotFound)
	account, err = s.GetAccount(ctx, "acc-1")
	require.NoError(t, err)
	require.Equal(t, int64(700), account.BalanceCents)
	_, err = payouts.CreatePayout(ctx, *res, uuid.New(), "nobody", 1, render)
	require.ErrorIs(t, err, pix.ErrAccountNotFound)

	// The declared queue serves the payout to the saga's dispatcher.
	queue := payouts.Queue()
	require.Equal(t, sagaexample.PayoutDueChannel, queue.Channel())
	due, err := queue.Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, created.ID.String(), due[0].Key)
	require.Equal(t, int64(300), due[0].AmountCents)
}
