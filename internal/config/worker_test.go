package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/config"
)

// The worker's relay needs a broker, and the service never starts one of
// its own: without NATS_URL the worker refuses to start, by the setting's
// name, unless the relay is off.
func TestCheckWorkerNeedsNATSURLForTheRelay(t *testing.T) {
	cfg := config.Default()
	require.ErrorContains(t, cfg.CheckWorker(), "NATS_URL is unset")
	cfg.NATSURL = "nats://127.0.0.1:4222"
	require.NoError(t, cfg.CheckWorker())
	cfg.NATSURL, cfg.OutboxRelayEnabled = "", false
	require.NoError(t, cfg.CheckWorker())
}

// Each family's worker keeps eight workflow task polls by default: two
// for each of a task queue's four partitions, half of them on its sticky
// queue (worker.Options.WorkflowTaskPollers). One is refused: the SDK
// panics on it.
func TestWorkflowTaskPollers(t *testing.T) {
	c, err := config.FromLookup(config.LookupIn(nil))
	require.NoError(t, err)
	require.Equal(t, 8, c.WorkerWorkflowTaskPollers)
	c, err = config.FromLookup(config.LookupIn(map[string]string{"WORKER_WORKFLOW_TASK_POLLERS": "16"}))
	require.NoError(t, err)
	require.Equal(t, 16, c.WorkerWorkflowTaskPollers)
	for _, v := range []string{"1", "0", "many"} {
		_, err := config.FromLookup(config.LookupIn(map[string]string{"WORKER_WORKFLOW_TASK_POLLERS": v}))
		require.ErrorContains(t, err, "WORKER_WORKFLOW_TASK_POLLERS", v)
	}
}
