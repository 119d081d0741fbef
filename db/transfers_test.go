package db_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
)

var keys = db.KeyPolicy{LockFor: 30 * time.Second, KeepFor: 24 * time.Hour}

func render(t pix.Transfer) ([]byte, error) { return json.Marshal(t) }

func newTransfer(account string, amount int64) db.NewTransfer {
	return db.NewTransfer{ID: uuid.New(), EndToEndID: pix.NewEndToEndID("12345678", time.Now()),
		TransferRequest: pix.TransferRequest{AccountID: account, AmountCents: amount, PixKey: "maria@example.com"}}
}

// debit runs one transfer under a fresh key.
func debit(t *testing.T, s *db.Store, account string, amount int64) pix.Transfer {
	t.Helper()
	ctx := context.Background()
	res, _, err := s.ReserveKey(ctx, "test-caller", uuid.New(), "h", keys)
	require.NoError(t, err)
	tr, err := s.CreateTransfer(ctx, *res, newTransfer(account, amount), render)
	require.NoError(t, err)
	return tr
}

func TestIdempotencyKeyLife(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	openAccount(t, s, "acc-1", 10_000)
	key := uuid.New()

	res, replay, err := s.ReserveKey(ctx, "test-caller", key, "hash-a", keys)
	require.NoError(t, err)
	require.Nil(t, replay)
	require.NotNil(t, res)

	_, _, err = s.ReserveKey(ctx, "test-caller", key, "hash-a", keys)
	var inProgress *db.KeyInProgressError
	require.ErrorAs(t, err, &inProgress, "the holder has not answered yet")
	require.ErrorIs(t, err, pix.ErrRequestInProgress)
	require.Greater(t, inProgress.RetryAfter, 25*time.Second)
	_, _, err = s.ReserveKey(ctx, "test-caller", key, "hash-b", keys)
	require.ErrorIs(t, err, pix.ErrIdempotencyKeyReused)

	created, err := s.CreateTransfer(ctx, *res, newTransfer("acc-1", 1_500), render)
	require.NoError(t, err)
	require.Equal(t, pix.TransferDebited, created.Status)
	require.EqualValues(t, 8_500, created.BalanceAfterCents)
	require.EqualValues(t, 8_500, balance(t, s, "acc-1"))

	_, replay, err = s.ReserveKey(ctx, "test-caller", key, "hash-a", keys)
	require.NoError(t, err)
	require.Equal(t, 201, replay.StatusCode)
	var recorded pix.Transfer
	require.NoError(t, json.Unmarshal(replay.Body, &recorded))
	require.Equal(t, created.ID, recorded.ID)
	_, _, err = s.ReserveKey(ctx, "test-caller", key, "hash-b", keys)
	require.ErrorIs(t, err, pix.ErrIdempotencyKeyReused, "a recorded key is bound to its body too")
}

func TestIdempotencyKeysBelongToTheirCaller(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	openAccount(t, s, "acc-1", 10_000)
	key := uuid.New()

	alice, _, err := s.ReserveKey(ctx, "alice", key, "hash-a", keys)
	require.NoError(t, err)
	created, err := s.CreateTransfer(ctx, *alice, newTransfer("acc-1", 1_000), render)
	require.NoError(t, err)

	// Mallory, holding Alice's key and body, gets no replay of her answer
	// and does not block her: his request is his own.
	mallory, replay, err := s.ReserveKey(ctx, "mallory", key, "hash-a", keys)
	require.NoError(t, err)
	require.Nil(t, replay, "another caller's recorded answer is never replayed")
	require.NotNil(t, mallory)
	require.NoError(t, s.ReleaseKey(ctx, *mallory))

	_, replay, err = s.ReserveKey(ctx, "alice", key, "hash-a", keys)
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
	s := dbtest.New(t)
	openAccount(t, s, "acc-1", 10_000)
	key := uuid.New()
	short := db.KeyPolicy{LockFor: 50 * time.Millisecond, KeepFor: time.Hour}

	dead, _, err := s.ReserveKey(ctx, "test-caller", key, "h", short)
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	taker, _, err := s.ReserveKey(ctx, "test-caller", key, "h", keys)
	require.NoError(t, err, "a reservation past its lock without a response is taken over")
	require.NotEqual(t, dead.Token, taker.Token)

	// The holder that was thought dead wakes up: it can't commit.
	_, err = s.CreateTransfer(ctx, *dead, newTransfer("acc-1", 100), render)
	require.ErrorIs(t, err, pix.ErrRequestInProgress)
	require.EqualValues(t, 10_000, balance(t, s, "acc-1"), "its debit rolled back")

	_, err = s.CreateTransfer(ctx, *taker, newTransfer("acc-1", 100), render)
	require.NoError(t, err)
	require.EqualValues(t, 9_900, balance(t, s, "acc-1"))
}

func TestIdempotencyKeyReleaseAndExpiry(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	key := uuid.New()
	res, _, err := s.ReserveKey(ctx, "test-caller", key, "h", keys)
	require.NoError(t, err)
	require.NoError(t, s.ReleaseKey(ctx, *res))
	again, _, err := s.ReserveKey(ctx, "test-caller", key, "other body", keys)
	require.NoError(t, err, "a released key is free, for any body")

	require.NoError(t, s.RecordResponse(ctx, *again, 422, []byte(`{"error":{"code":"insufficient_funds","message":"x"}}`)))
	_, replay, err := s.ReserveKey(ctx, "test-caller", key, "other body", keys)
	require.NoError(t, err)
	require.Equal(t, 422, replay.StatusCode, "a refusal is replayed")

	// Expired keys: a new request is a new operation, and the cleanup
	// deletes them in batches.
	expired := []uuid.UUID{key, uuid.New(), uuid.New()}
	for _, k := range expired[1:] {
		_, _, err := s.ReserveKey(ctx, "test-caller", k, "h", keys)
		require.NoError(t, err)
	}
	kept := uuid.New()
	_, _, err = s.ReserveKey(ctx, "test-caller", kept, "h", keys)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = ANY($1)`, expired)
	require.NoError(t, err)

	n, err := s.DeleteExpiredKeys(ctx, 2)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	n, err = s.DeleteExpiredKeys(ctx, 2)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	var left int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&left))
	require.Equal(t, 1, left, "the unexpired key stays")
}

func TestCreateTransferRefusalsChangeNothing(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	openAccount(t, s, "acc-1", 1_000)
	require.NoError(t, s.CloseAccount(ctx, "acc-1"))
	openAccount(t, s, "acc-2", 1_000)
	for _, tc := range []struct {
		account string
		amount  int64
		want    error
	}{
		{"acc-2", 1_001, pix.ErrInsufficientFunds},
		{"acc-none", 1, pix.ErrAccountNotFound},
		{"acc-1", 1, pix.ErrAccountClosed},
	} {
		res, _, err := s.ReserveKey(ctx, "test-caller", uuid.New(), "h", keys)
		require.NoError(t, err)
		_, err = s.CreateTransfer(ctx, *res, newTransfer(tc.account, tc.amount), render)
		require.ErrorIs(t, err, tc.want)
	}
	require.EqualValues(t, 1_000, balance(t, s, "acc-2"))
	var transfers int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM pix_transfers`).Scan(&transfers))
	require.Zero(t, transfers)
}

func TestRefundHappensExactlyOnce(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	openAccount(t, s, "acc-1", 10_000)
	tr := debit(t, s, "acc-1", 2_500)
	id := uuid.MustParse(tr.ID)

	due, err := s.TransferQueue().Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []claimState{{Key: tr.ID}}, claimStates(due), "a new transfer is due for its saga")
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
	require.EqualValues(t, 10_000, balance(t, s, "acc-1"), "the balance is restored exactly, once")
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
	s := dbtest.New(t)
	openAccount(t, s, "acc-1", 10_000)
	tr := debit(t, s, "acc-1", 2_500)
	id := uuid.MustParse(tr.ID)
	settled, err := s.SettleTransfer(ctx, id)
	require.NoError(t, err)
	require.Equal(t, pix.TransferSettled, settled.Status)
	_, err = s.RefundTransfer(ctx, id, "late rejection")
	require.ErrorIs(t, err, pix.ErrTransferFinal)
	require.EqualValues(t, 7_500, balance(t, s, "acc-1"))
	again, err := s.SettleTransfer(ctx, id)
	require.NoError(t, err, "settling twice is a no-op")
	require.Equal(t, settled.SettledAt, again.SettledAt)
}

// The age the metrics read (pix_transfer_oldest_open_age_seconds): that of
// the oldest transfer debited and neither settled nor refunded, 0 once
// none is open.
func TestOldestOpenTransferAge(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	openAccount(t, s, "acc-1", 10_000)
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
