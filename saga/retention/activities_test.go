package retention_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/retention"
)

// a references the activities for ExecuteActivity; never dereferenced.
var a *retention.Activities

// The retention deletes old done inbox rows in batches of BatchSize, up to
// MaxBatches per run (the next run takes the rest), and keeps the credits.
func TestRetentionDeletesInBatches(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	_, err := s.CreateAccount(ctx, db.NewAccount{ID: "acc-1", OwnerName: "A"})
	require.NoError(t, err)
	for i := range 7 {
		id := fmt.Sprintf("E12345678202611291200%011d", 900+i)
		payload, _ := json.Marshal(map[string]any{"end_to_end_id": id})
		_, err := s.Receive(ctx, pix.Notification{EndToEndID: id, AccountID: "acc-1", AmountCents: 10, Payload: payload})
		require.NoError(t, err)
		_, err = s.Credit(ctx, id, 1, 1)
		require.NoError(t, err)
	}
	_, err = s.Pool().Exec(ctx, `UPDATE inbox_messages SET processed_at = now() - interval '31 days'`)
	require.NoError(t, err)

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(&retention.Activities{Store: retention.NewStore(s), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	in := retention.Input{BatchSize: 2, MaxBatches: 3, InboxRetention: payload.Duration(30 * 24 * time.Hour)}
	deleted := func() int64 {
		val, err := env.ExecuteActivity(a.DeleteDoneInboxRows, in)
		require.NoError(t, err)
		var n int64
		require.NoError(t, val.Get(&n))
		return n
	}
	require.EqualValues(t, 6, deleted(), "three batches of two")
	require.EqualValues(t, 1, deleted(), "the next run takes the rest")
	require.EqualValues(t, 0, deleted())
	var credits int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM pix_credits`).Scan(&credits))
	require.Equal(t, 7, credits, "the credits stay: the guard against a second credit")
}

// The retention waits BatchPause before each batch after the first (its
// pace beside the ingest), and none after the short batch that ends it.
func TestRetentionPausesBetweenBatches(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(&retention.Activities{Store: retention.NewStore(s), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	// Three expired keys, batches of one: three full batches and a short
	// (empty) fourth, so three pauses.
	_, err := s.Pool().Exec(ctx, `INSERT INTO idempotency_keys (key, request_hash, status_code, response_body, expires_at)
		SELECT gen_random_uuid(), 'h', 201, '{}', now() - interval '1 hour' FROM generate_series(1, 3)`)
	require.NoError(t, err)
	const pause = 200 * time.Millisecond
	began := time.Now()
	val, err := env.ExecuteActivity(a.DeleteExpiredIdempotencyKeys,
		retention.Input{BatchSize: 1, MaxBatches: 10, BatchPause: payload.Duration(pause)})
	require.NoError(t, err)
	var n int64
	require.NoError(t, val.Get(&n))
	require.EqualValues(t, 3, n)
	require.GreaterOrEqual(t, time.Since(began), 3*pause, "a pause before each batch after the first")
}

// A worker that stops ends its retention run's pause: the run returns the
// rows it deleted so far (here the first batch of one, of three expired
// keys), as a success, rather than wait out a 30 s pause (and be retried
// elsewhere once its heartbeat times out). A run that waited would delete
// all three.
func TestRetentionEndsWhenItsWorkerStops(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(&retention.Activities{Store: retention.NewStore(s), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	stop := make(chan struct{})
	env.SetWorkerStopChannel(stop)
	_, err := s.Pool().Exec(ctx, `INSERT INTO idempotency_keys (key, request_hash, status_code, response_body, expires_at)
		SELECT gen_random_uuid(), 'h', 201, '{}', now() - interval '1 hour' FROM generate_series(1, 3)`)
	require.NoError(t, err)
	time.AfterFunc(500*time.Millisecond, func() { close(stop) })
	val, err := env.ExecuteActivity(a.DeleteExpiredIdempotencyKeys,
		retention.Input{BatchSize: 1, MaxBatches: 10, BatchPause: payload.Duration(30 * time.Second)})
	require.NoError(t, err)
	var n int64
	require.NoError(t, val.Get(&n))
	require.EqualValues(t, 1, n, "the first batch, then the stop")
	var left int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&left))
	require.Equal(t, 2, left, "the next run takes the rest")
}

// An input that bounds nothing fails the activity as final
// (RetentionInputInvalid), deleting nothing.
func TestRetentionRefusesABatchOfNoRows(t *testing.T) {
	s := dbtest.New(t)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(&retention.Activities{Store: retention.NewStore(s), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	_, err := env.ExecuteActivity(a.DeleteDoneInboxRows, retention.Input{BatchSize: 0, MaxBatches: 10,
		InboxRetention: payload.Duration(30 * 24 * time.Hour)})
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, retention.ErrTypeInputInvalid, appErr.Type())
	require.True(t, appErr.NonRetryable())
}
