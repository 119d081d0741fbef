//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/tooling/load"
)

// The load command's smoke test: a short open-model load with redeliveries
// and simultaneous copies, then the invariants it checks; and one pass of
// each ceiling. Correctness only: no figure is asserted.
func TestLoadSmoke(t *testing.T) {
	s := newStack(t, shared, nil)
	ctx := context.Background()
	sess, err := load.NewSession(load.Options{
		APIURL: s.baseURL, RunID: load.NewRunID(), Accounts: 10, DupRatio: 0.3, BurstRatio: 0.1, BurstCopies: 4,
		MaxInFlight: 32, RetryUnacked: true, RetryFor: 30 * time.Second, Seed: 1, SigningKey: e2eSigningKey,
	})
	require.NoError(t, err)
	defer sess.Close()
	require.NoError(t, load.OpenAccounts(ctx, s.store.Pool(), sess.RunID(), 10))

	step, err := sess.Run(ctx, 40, 2*time.Second)
	require.NoError(t, err)
	require.Zero(t, step.Unacked)
	require.Empty(t, step.Errors)
	require.Greater(t, step.Acked, step.Firsts, "redeliveries and copies were sent and absorbed")
	burst := sess.Send(ctx, 3, 50)
	require.EqualValues(t, 50, burst.Acked)
	require.EqualValues(t, 1, burst.Firsts)

	_, err = load.Drain(ctx, s.store.Pool(), sess.RunID(), 2*time.Minute)
	require.NoError(t, err)
	inv, err := load.Check(ctx, s.store.Pool(), sess)
	require.NoError(t, err)
	require.Empty(t, inv.Violations())
	require.Equal(t, len(sess.Sent()), inv.Credits)
	times, err := load.Times(ctx, s.store.Pool(), sess)
	require.NoError(t, err)
	require.Equal(t, inv.Credits, times.Credits)

	// A broken book must be seen: the check is not a formality.
	_, err = s.store.Pool().Exec(ctx, `UPDATE accounts SET balance_cents = balance_cents + 1 WHERE id = $1`, load.AccountID(sess.RunID(), 3))
	require.NoError(t, err)
	inv, err = load.Check(ctx, s.store.Pool(), sess)
	require.NoError(t, err)
	require.Equal(t, 1, inv.UnbalancedAccounts)

	ingest, err := load.IngestCeiling(ctx, s.cfg.DatabaseURL, 2, 300*time.Millisecond)
	require.NoError(t, err)
	require.Positive(t, ingest.PerSecond)
	require.Positive(t, ingest.Inserts)
	// The CPU accounting saw PostgreSQL do the inserts (its server runs on
	// this machine in every test set-up of the project).
	require.NotNil(t, ingest.CPU)
	require.Positive(t, ingest.CPU.Busy)
	require.Positive(t, ingest.CPU.Procs["postgres"])
	engine, err := load.StartEngine(s.client(), sess.RunID())
	require.NoError(t, err)
	defer engine.Stop()
	require.NoError(t, engine.StartVersioned(ctx))
	for _, mode := range []load.EngineMode{load.EngineActivity, load.EngineLocalEager, load.EngineLocalEagerVersioned} {
		perSec, err := engine.Throughput(ctx, mode, 10, 4)
		require.NoError(t, err)
		require.Positive(t, perSec)
	}
	lat, err := engine.Latency(ctx, load.EngineActivity, 3, 0)
	require.NoError(t, err)
	require.Positive(t, lat)
	began := time.Now()
	lat, err = engine.Latency(ctx, load.EngineLocalEager, 3, 100*time.Millisecond)
	require.NoError(t, err)
	require.Positive(t, lat)
	require.GreaterOrEqual(t, time.Since(began), 200*time.Millisecond, "paced: the third run starts 200 ms after the first")
}
