package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/worker"
	"github.com/pixbank/pix/workflows"
)

// Only the current build brings the Schedules to its configuration: an
// old build draining after an upgrade (which may restart with its old
// settings) writes nothing, and a build an operator promotes starts
// writing without a restart.
func TestOnlyTheCurrentBuildKeepsTheSchedules(t *testing.T) {
	s := temporaltest.StartT(t)
	c := s.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	queues := workflows.TaskQueuesFor(fmt.Sprintf("pix-credit-k%d", rand.Uint64()))
	a, b := worker.Version(queues, "build-a"), worker.Version(queues, "build-b")
	startBuild(t, c, queues, sagaOnBuildA, worker.Options{Version: a})
	startBuild(t, c, queues, sagaOnBuildB, worker.Options{Version: b})
	require.NoError(t, worker.SetCurrentVersion(ctx, c, a))

	var syncsA, syncsB atomic.Int64
	keep := func(v worker.Options, n *atomic.Int64) {
		go func() {
			_ = worker.KeepSchedules(ctx, c, v.Version, 100*time.Millisecond, func(context.Context) error { n.Add(1); return nil }, slog.New(slog.DiscardHandler))
		}()
	}
	keep(worker.Options{Version: a}, &syncsA)
	keep(worker.Options{Version: b}, &syncsB)
	require.Eventually(t, func() bool { return syncsA.Load() >= 3 }, 30*time.Second, 20*time.Millisecond, "the current build keeps them")
	require.Zero(t, syncsB.Load(), "a build that is not current writes nothing")

	require.NoError(t, worker.SetCurrentVersion(ctx, c, b))
	require.Eventually(t, func() bool { return syncsB.Load() >= 3 }, 30*time.Second, 20*time.Millisecond, "promoted, B keeps them")
	time.Sleep(500 * time.Millisecond) // A's check in flight at the switch ends
	afterSwitch := syncsA.Load()
	time.Sleep(time.Second)
	require.Equal(t, afterSwitch, syncsA.Load(), "A, no longer current, writes nothing")
}
