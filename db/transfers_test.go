package db_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/retention"
	"github.com/pixbank/pix/saga/transfer"
)

func render(t pix.Transfer) ([]byte, error) { return json.Marshal(t) }

func newTransfer(account string, amount int64) db.NewTransfer {
	return db.NewTransfer{ID: uuid.New(), EndToEndID: pix.NewEndToEndID("12345678", time.Now()),
		TransferRequest: pix.TransferRequest{AccountID: account, AmountCents: amount, PixKey: "maria@example.com"}}
}

// debit runs one transfer under a fresh key, as POST /pix does (the
// transfer saga's store, over the core's debit and hand-over): the money
// out of an account that the tests of the balance, the holds, the wakes
// and the events start from.
func debit(t *testing.T, s *db.Store, account string, amount int64) pix.Transfer {
	t.Helper()
	tr, err := transfer.NewStore(s).CreateTransfer(context.Background(), *dbtest.Reserve(t, s, "test-caller"), newTransfer(account, amount), render)
	require.NoError(t, err)
	return tr
}

func TestIdempotencyKeyLife(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 10_000)
	key := uuid.New()

	res, replay, err := s.ReserveKey(ctx, "test-caller", key, "hash-a", dbtest.Keys)
	require.NoError(t, err)
	require.Nil(t, replay)
	require.NotNil(t, res)

	_, _, err = s.ReserveKey(ctx, "test-caller", key, "hash-a", dbtest.Keys)
	var inProgress *db.KeyInProgressError
	require.ErrorAs(t, err, &inProgress, "the holder has not answered yet")
	require.ErrorIs(t, err, pix.ErrRequestInProgress)
	require.Greater(t, inProgress.RetryAfter, 25*time.Second)
	_, _, err = s.ReserveKey(ctx, "test-caller", key, "hash-b", dbtest.Keys)
	require.ErrorIs(t, err, pix.ErrIdempotencyKeyReused)

	created, err := transfer.NewStore(s).CreateTransfer(ctx, *res, newTransfer("acc-1", 1_500), render)
	require.NoError(t, err)
	require.Equal(t, pix.TransferDebited, created.Status)
	require.EqualValues(t, 8_500, created.BalanceAfterCents)
	require.EqualValues(t, 8_500, dbtest.Balance(t, s, "acc-1"))

	_, replay, err = s.ReserveKey(ctx, "test-caller", key, "hash-a", dbtest.Keys)
	require.NoError(t, err)
	require.Equal(t, 201, replay.StatusCode)
	var recorded pix.Transfer
	require.NoError(t, json.Unmarshal(replay.Body, &recorded))
	require.Equal(t, created.ID, recorded.ID)
	_, _, err = s.ReserveKey(ctx, "test-caller", key, "hash-b", dbtest.Keys)
	require.ErrorIs(t, err, pix.ErrIdempotencyKeyReused, "a recorded key is bound to its body too")
}

func TestIdempotencyKeysBelongToTheirCaller(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 10_000)
	key := uuid.New()

	alice, _, err := s.ReserveKey(ctx, "alice", key, "hash-a", dbtest.Keys)
	require.NoError(t, err)
	created, err := transfer.NewStore(s).CreateTransfer(ctx, *alice, newTransfer("acc-1", 1_000), render)
	require.NoError(t, err)

	// Mallory, holding Alice's key and body, gets no replay of her answer
	// and does not block her: his request is his own.
	mallory, replay, err := s.ReserveKey(ctx, "mallory", key, "hash-a", dbtest.Keys)
	require.NoError(t, err)
	require.Nil(t, replay, "another caller's recorded answer is never replayed")
	require.NotNil(t, mallory)
	require.NoError(t, s.ReleaseKey(ctx, *mallory))

	_, replay, err = s.ReserveKey(ctx, "alice", key, "hash-a", dbtest.Keys)
	require.NoError(t, err)
	require.NotNil(t, replay, "alice's own retry still replays")
	var recorded pix.Transfer
	require.NoError(t, json.Unmarshal(replay.Body, &recorded))
	require.Equal(t, created.ID, recorded.ID)

	var requestedBy string
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT requested_by FROM pix_transfers WHERE id = $1`, created.ID).Scan(&requestedBy))
	require.Equal(t, "alice", requestedBy, "the debit records who asked for it")
}

func TestIdempotencyKeyTakeoverFencesTheDeadHolder(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 10_000)
	key := uuid.New()
	short := db.KeyPolicy{LockFor: 50 * time.Millisecond, KeepFor: time.Hour}

	dead, _, err := s.ReserveKey(ctx, "test-caller", key, "h", short)
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	taker, _, err := s.ReserveKey(ctx, "test-caller", key, "h", dbtest.Keys)
	require.NoError(t, err, "a reservation past its lock without a response is taken over")
	require.NotEqual(t, dead.Token, taker.Token)

	// The holder that was thought dead wakes up: it can't commit.
	_, err = transfer.NewStore(s).CreateTransfer(ctx, *dead, newTransfer("acc-1", 100), render)
	require.ErrorIs(t, err, pix.ErrRequestInProgress)
	require.EqualValues(t, 10_000, dbtest.Balance(t, s, "acc-1"), "its debit rolled back")

	_, err = transfer.NewStore(s).CreateTransfer(ctx, *taker, newTransfer("acc-1", 100), render)
	require.NoError(t, err)
	require.EqualValues(t, 9_900, dbtest.Balance(t, s, "acc-1"))
}

func TestIdempotencyKeyReleaseAndExpiry(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	key := uuid.New()
	res, _, err := s.ReserveKey(ctx, "test-caller", key, "h", dbtest.Keys)
	require.NoError(t, err)
	require.NoError(t, s.ReleaseKey(ctx, *res))
	again, _, err := s.ReserveKey(ctx, "test-caller", key, "other body", dbtest.Keys)
	require.NoError(t, err, "a released key is free, for any body")

	require.NoError(t, s.RecordResponse(ctx, *again, 422, []byte(`{"error":{"code":"insufficient_funds","message":"x"}}`)))
	_, replay, err := s.ReserveKey(ctx, "test-caller", key, "other body", dbtest.Keys)
	require.NoError(t, err)
	require.Equal(t, 422, replay.StatusCode, "a refusal is replayed")

	// Expired keys: a new request is a new operation, and the cleanup
	// deletes them in batches.
	expired := []uuid.UUID{key, uuid.New(), uuid.New()}
	for _, k := range expired[1:] {
		_, _, err := s.ReserveKey(ctx, "test-caller", k, "h", dbtest.Keys)
		require.NoError(t, err)
	}
	kept := uuid.New()
	_, _, err = s.ReserveKey(ctx, "test-caller", kept, "h", dbtest.Keys)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = ANY($1)`, expired)
	require.NoError(t, err)

	n, err := retention.NewStore(s).DeleteExpiredKeys(ctx, 2)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	n, err = retention.NewStore(s).DeleteExpiredKeys(ctx, 2)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	var left int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&left))
	require.Equal(t, 1, left, "the unexpired key stays")
}
