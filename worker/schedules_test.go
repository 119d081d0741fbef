package worker_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/internal/tooling/logtest"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/catchup"
	"github.com/pixbank/pix/saga/registry"
	"github.com/pixbank/pix/saga/retention"
	"github.com/pixbank/pix/worker"
	"github.com/pixbank/pix/workflows"
)

// keepEvery is the tests' interval of KeepSchedules (15 s in pixd).
const keepEvery = 20 * time.Millisecond

// warning is what a worker logs when the Schedules differ from its
// configuration.
const warning = "schedules differ from this worker's configuration: another worker of this build wrote its settings (or a hand edit); left as they are"

// Two pools of one build with different settings (a settings-only rolling
// change, or a pool with the catch-up off) write the Schedules once each,
// at their start, not in turn at every interval: the pool whose settings
// were written over writes nothing, and says so.
func TestTwoPoolsOfOneBuildWriteTheSchedulesOnce(t *testing.T) {
	s := temporaltest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	queues := runconf.TaskQueuesFor(fmt.Sprintf("pix-credit-p%d", rand.Uint64()))
	v := worker.Version(queues, "build-a")
	startBuild(t, s.Client(t), queues, sagaOnBuildA, worker.Options{Version: v})
	require.NoError(t, worker.SetCurrentVersion(ctx, s.Client(t), v))

	var writes atomic.Int64
	a := newPool(t, s, queues, &writes, nil)
	a.c.refuse.Store(2) // Temporal refuses pool A's first two writes: asked again
	a.keep(t, v)
	require.Eventually(t, func() bool { return writes.Load() == 3 }, 30*time.Second, 10*time.Millisecond,
		"pool A creates the retention, reconciliation and catch-up Schedules")
	require.Equal(t, 2, a.log.Count("schedules: could not bring them to the configuration; asked again"))

	// Pool B, the same build: INBOX_RETENTION=168h and the catch-up off.
	b := newPool(t, s, queues, &writes, map[string]string{"INBOX_RETENTION": "168h", "PSP_CATCHUP_INTERVAL": "0"})
	b.keep(t, v)
	require.Eventually(t, func() bool { return writes.Load() >= 5 }, 30*time.Second, 10*time.Millisecond,
		"pool B brings the retention to its INBOX_RETENTION and deletes the catch-up")
	a.waitAsked(t, 10)
	b.waitAsked(t, 10)
	require.EqualValues(t, 5, writes.Load(), "each pool wrote at its start, then neither wrote again")
	require.Equal(t, payload.Duration(168*time.Hour), retentionOf(t, a.c, queues).InboxRetention, "pool B's settings, the last written")
	requireNoSchedule(t, a.c, catchup.ScheduleID(queues.Base))

	// Pool A, written over, says so (again if it looked between B's two
	// writes), not at every interval, and counts what differs.
	said := a.log.Count(warning)
	require.NotZero(t, said)
	require.Contains(t, a.log.String(), fmt.Sprintf(`"differences":[{"schedule_id":%q,"differs":["arguments"]},{"schedule_id":%q,"differs":["missing"]}]`,
		retention.ScheduleID(queues.Base), catchup.ScheduleID(queues.Base)))
	require.EqualValues(t, 2, a.differing(t))
	a.waitAsked(t, 10)
	require.Equal(t, said, a.log.Count(warning), "said when it appeared or changed, not at every interval")
	require.Zero(t, b.log.Count(warning))
	require.Zero(t, b.differing(t))
	require.EqualValues(t, 5, writes.Load())
}

// Only the current build brings the Schedules to its configuration: an
// old build draining after an upgrade (which may restart with its old
// settings) writes nothing, and a build an operator promotes writes its
// settings once, without a restart; rolled back, the old build writes its
// own again.
func TestOnlyTheCurrentBuildKeepsTheSchedules(t *testing.T) {
	s := temporaltest.StartT(t)
	c := s.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	queues := runconf.TaskQueuesFor(fmt.Sprintf("pix-credit-k%d", rand.Uint64()))
	va, vb := worker.Version(queues, "build-a"), worker.Version(queues, "build-b")
	startBuild(t, c, queues, sagaOnBuildA, worker.Options{Version: va})
	startBuild(t, c, queues, sagaOnBuildB, worker.Options{Version: vb})
	require.NoError(t, worker.SetCurrentVersion(ctx, c, va))

	var writes atomic.Int64
	a := newPool(t, s, queues, &writes, nil)
	b := newPool(t, s, queues, &writes, map[string]string{"INBOX_RETENTION": "168h"})
	a.keep(t, va)
	b.keep(t, vb)
	require.Eventually(t, func() bool { return writes.Load() == 3 }, 30*time.Second, 10*time.Millisecond, "the current build creates them")
	b.waitAsked(t, 10)
	require.EqualValues(t, 3, writes.Load(), "a build that is not current writes nothing")
	require.Equal(t, payload.Duration(720*time.Hour), retentionOf(t, c, queues).InboxRetention)

	require.NoError(t, worker.SetCurrentVersion(ctx, c, vb))
	require.Eventually(t, func() bool { return writes.Load() == 4 }, 30*time.Second, 10*time.Millisecond, "promoted, B writes its settings")
	require.Equal(t, payload.Duration(168*time.Hour), retentionOf(t, c, queues).InboxRetention)
	a.waitAsked(t, 10)
	b.waitAsked(t, 10)
	require.EqualValues(t, 4, writes.Load(), "A, no longer current, writes nothing; B wrote once")
	require.Zero(t, a.differing(t), "a build that is not current compares nothing")

	require.NoError(t, worker.SetCurrentVersion(ctx, c, va))
	require.Eventually(t, func() bool { return writes.Load() == 5 }, 30*time.Second, 10*time.Millisecond, "rolled back, A writes its settings again")
	require.Equal(t, payload.Duration(720*time.Hour), retentionOf(t, c, queues).InboxRetention)
	a.waitAsked(t, 10)
	b.waitAsked(t, 10)
	require.EqualValues(t, 5, writes.Load())
	// A promotion is no difference to warn of: the build it replaced
	// writes nothing and says only that it is no longer current.
	require.Zero(t, a.log.Count(warning), a.log.String())
	require.Zero(t, b.log.Count(warning), b.log.String())
}

// pool is one pool of workers (here: one KeepSchedules loop) with its own
// settings, on a client that counts what it writes to the Schedules.
type pool struct {
	c       *counted
	env     saga.Env
	log     *logtest.Lines
	metrics *prometheus.Registry
}

// newPool is a pool of workers of the default configuration whose
// environment holds vars (the sagas' own settings).
func newPool(t *testing.T, s *temporaltest.Server, queues runconf.TaskQueues, writes *atomic.Int64, vars map[string]string) *pool {
	cfg := config.Default()
	log := &logtest.Lines{}
	logger := log.Logger()
	reg := prometheus.NewRegistry()
	return &pool{
		c: &counted{Client: s.Client(t), writes: writes},
		env: saga.Env{Cfg: cfg, Queues: queues, Log: logger, Metrics: metrics.NewWorker(reg), Lookup: config.LookupIn(vars),
			Schedules: workflows.ScheduleSync{DataConverter: converter.GetDefaultDataConverter(), Log: logger}},
		log:     log,
		metrics: reg,
	}
}

// differing is the pool's pix_schedules_differing.
func (p *pool) differing(t *testing.T) float64 {
	t.Helper()
	families, err := p.metrics.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "pix_schedules_differing" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no pix_schedules_differing")
	return 0
}

// keep runs the pool's KeepSchedules as build v until the test ends.
func (p *pool) keep(t *testing.T, v sdkworker.WorkerDeploymentVersion) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- worker.KeepSchedules(ctx, worker.Schedules{Client: p.c, Sagas: registry.All, Env: p.env}, v, keepEvery)
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// waitAsked waits until the pool has asked n more times whether its build
// is current: n more intervals of its loop.
func (p *pool) waitAsked(t *testing.T, n int64) {
	t.Helper()
	want := p.c.asked.Load() + n
	require.Eventually(t, func() bool { return p.c.asked.Load() >= want }, 30*time.Second, 5*time.Millisecond)
}

// retentionOf reads the retention periods the retention Schedule holds.
func retentionOf(t *testing.T, c client.Client, queues runconf.TaskQueues) retention.Input {
	t.Helper()
	d, err := c.ScheduleClient().GetHandle(context.Background(), retention.ScheduleID(queues.Base)).Describe(context.Background())
	require.NoError(t, err)
	var in retention.Input
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(d.Schedule.Action.(*client.ScheduleWorkflowAction).Args[0].(*commonpb.Payload), &in))
	return in
}

func requireNoSchedule(t *testing.T, c client.Client, id string) {
	t.Helper()
	_, err := c.ScheduleClient().GetHandle(context.Background(), id).Describe(context.Background())
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "schedule %s", id)
}

// counted is a Temporal client that counts the writes to Schedules it
// makes (a creation, an update that changed something, a deletion), in a
// counter its pools share, and the times it asked whether a build is
// current (a description of a worker deployment).
type counted struct {
	client.Client
	writes *atomic.Int64
	asked  atomic.Int64
	// refuse is how many of its next creations Temporal refuses, as
	// when it is unavailable.
	refuse atomic.Int64
}

func (c *counted) ScheduleClient() client.ScheduleClient {
	return countedSchedules{c.Client.ScheduleClient(), c.writes, &c.refuse}
}

func (c *counted) WorkerDeploymentClient() client.WorkerDeploymentClient {
	return countedDeployments{c.Client.WorkerDeploymentClient(), &c.asked}
}

type countedSchedules struct {
	client.ScheduleClient
	writes, refuse *atomic.Int64
}

func (s countedSchedules) Create(ctx context.Context, o client.ScheduleOptions) (client.ScheduleHandle, error) {
	if s.refuse.Add(-1) >= 0 {
		return nil, serviceerror.NewUnavailable("refused by the test")
	}
	h, err := s.ScheduleClient.Create(ctx, o)
	if err == nil {
		s.writes.Add(1)
	}
	return h, err
}

func (s countedSchedules) GetHandle(ctx context.Context, id string) client.ScheduleHandle {
	return countedSchedule{s.ScheduleClient.GetHandle(ctx, id), s.writes}
}

type countedSchedule struct {
	client.ScheduleHandle
	writes *atomic.Int64
}

func (h countedSchedule) Update(ctx context.Context, o client.ScheduleUpdateOptions) error {
	wrote, do := false, o.DoUpdate
	o.DoUpdate = func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		u, err := do(in)
		wrote = err == nil
		return u, err
	}
	err := h.ScheduleHandle.Update(ctx, o)
	if err == nil && wrote {
		h.writes.Add(1)
	}
	return err
}

func (h countedSchedule) Delete(ctx context.Context) error {
	err := h.ScheduleHandle.Delete(ctx)
	if err == nil {
		h.writes.Add(1)
	}
	return err
}

type countedDeployments struct {
	client.WorkerDeploymentClient
	asked *atomic.Int64
}

func (d countedDeployments) GetHandle(name string) client.WorkerDeploymentHandle {
	return countedDeployment{d.WorkerDeploymentClient.GetHandle(name), d.asked}
}

type countedDeployment struct {
	client.WorkerDeploymentHandle
	asked *atomic.Int64
}

func (d countedDeployment) Describe(ctx context.Context, o client.WorkerDeploymentDescribeOptions) (client.WorkerDeploymentDescribeResponse, error) {
	d.asked.Add(1)
	return d.WorkerDeploymentHandle.Describe(ctx, o)
}
