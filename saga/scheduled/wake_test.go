package scheduled_test

// The cancel's durable wake-up, over PostgreSQL and a real Temporal: the
// saga's worker runs the workflow, and its two dispatchers
// (durable.Dispatcher over the saga's Source, which starts runs, and over
// its WakeSource, which signals them) work their queues as the worker
// process does.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/durable/rows"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/saga/sagatest"
	"github.com/pixbank/pix/saga/scheduled"
)

// unreachable is a Temporal that does not answer a signal (stopped, or the
// service's client still reconnecting after its restart): Unavailable.
type unreachable struct {
	mu    sync.Mutex
	tries int
}

func (u *unreachable) SignalWorkflow(context.Context, string, string, string, any) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.tries++
	return serviceerror.NewUnavailable("connection refused")
}

func (u *unreachable) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.tries
}

// unreachableClient is the dispatcher's client while Temporal does not
// answer its signals.
type unreachableClient struct {
	client.Client
	unreachable
}

func (u *unreachableClient) SignalWorkflow(ctx context.Context, id, runID, name string, arg any) error {
	return u.unreachable.SignalWorkflow(ctx, id, runID, name, arg)
}

// wakeEnv is the routes' harness (its cancels' signals lost), a Temporal
// with the saga's worker, and the saga's two dispatchers' sources.
type wakeEnv struct {
	*harness
	c       client.Client
	src     durable.Source // starts runs (pix_scheduled)
	wakes   durable.Source // wakes runs (pix_scheduled_cancel_wakes)
	lost    *unreachable
	options durable.Options
}

func newWakeEnv(t *testing.T) *wakeEnv {
	lost := &unreachable{}
	a := newAPIWith(t, time.Now(), lost)
	c := temporaltest.StartT(t).Client(t)
	taskQueue := fmt.Sprintf("pix-scheduled-wake-%d", time.Now().UnixNano())
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(scheduled.Workflow, workflow.RegisterOptions{Name: scheduled.WorkflowName})
	w.RegisterActivity(&scheduled.Activities{Store: a.f.store, BankISPB: ispb, Log: sagatest.Discard()})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return &wakeEnv{harness: a, c: c, lost: lost,
		src:   scheduled.Source(a.f.store.Queue(), taskQueue),
		wakes: scheduled.WakeSource(a.f.store.WakeQueue(), a.f.store),
		options: durable.Options{PollInterval: 50 * time.Millisecond, BatchSize: 10, Concurrency: 2,
			RecheckAfter: time.Minute, RecheckMax: 15 * time.Minute, RetryMaxDelay: time.Second}}
}

// dispatch runs one round of the dispatcher of src over c (nil: the
// Temporal's own client) and returns how many rows it claimed.
func (e *wakeEnv) dispatch(t *testing.T, src durable.Source, c client.Client) int {
	t.Helper()
	if c == nil {
		c = e.c
	}
	n, err := durable.New(nil, src, c, e.options, sagatest.Discard()).DispatchOnce(context.Background())
	require.NoError(t, err)
	return n
}

// due is the row's dispatch_due_at in the saga's queue (nil: out of it).
func (e *wakeEnv) due(t *testing.T, id uuid.UUID) *time.Time {
	t.Helper()
	var due *time.Time
	require.NoError(t, e.f.s.Pool().QueryRow(context.Background(),
		`SELECT dispatch_due_at FROM pix_scheduled WHERE id = $1`, id).Scan(&due))
	return due
}

// waking says whether the cancel's wake-up of the row is pending (its
// entry in the wake queue).
func (e *wakeEnv) waking(t *testing.T, id uuid.UUID) bool {
	t.Helper()
	var n int
	require.NoError(t, e.f.s.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM pix_scheduled_cancel_wakes WHERE scheduled_id = $1`, id).Scan(&n))
	return n > 0
}

// run describes the scheduled PIX's run: nil when it has none.
func (e *wakeEnv) run(t *testing.T, id uuid.UUID) *workflowRun {
	t.Helper()
	d, err := e.c.DescribeWorkflow(context.Background(), scheduled.WorkflowID(id.String()), "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return nil
	}
	require.NoError(t, err)
	info := d.RawResponse.GetWorkflowExecutionInfo()
	return &workflowRun{id: info.GetExecution().GetRunId(), status: info.GetStatus()}
}

type workflowRun struct {
	id     string
	status enums.WorkflowExecutionStatus
}

// cancel cancels the scheduled PIX through DELETE /pix/scheduled/{id}.
func (e *wakeEnv) cancel(t *testing.T, id uuid.UUID) {
	t.Helper()
	status, body := e.Call(http.MethodDelete, "/pix/scheduled/"+id.String(), "maria", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, scheduled.StatusCancelled, body["status"])
}

// wakeUntilDone runs the wake dispatcher until the row's wake-up ended (a
// failed signal defers it by the dispatcher's backoff).
func (e *wakeEnv) wakeUntilDone(t *testing.T, id uuid.UUID) {
	t.Helper()
	require.Eventually(t, func() bool {
		e.dispatch(t, e.wakes, nil)
		return !e.waking(t, id)
	}, 30*time.Second, 20*time.Millisecond, "the cancel's wake-up ends")
}

// endsCancelled waits for the run of the scheduled PIX to end, cancelled.
func (e *wakeEnv) endsCancelled(t *testing.T, id uuid.UUID) *workflowRun {
	t.Helper()
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out scheduled.Scheduled
	require.NoError(t, e.c.GetWorkflow(wctx, scheduled.WorkflowID(id.String()), "").Get(wctx, &out))
	require.Equal(t, scheduled.StatusCancelled, out.Status, "the run ends as the row says")
	closed := e.run(t, id)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, closed.status)
	requireOneConclusion(t, e.f, id)
	require.EqualValues(t, 50_000, e.f.balance("acc-maria"), "nothing debited")
	return closed
}

// started schedules a PIX 30 days ahead and has its run started (asleep).
func (e *wakeEnv) started(t *testing.T) uuid.UUID {
	t.Helper()
	s := e.f.schedule("acc-maria", 15_000, time.Now().AddDate(0, 0, 30))
	require.Equal(t, 1, e.dispatch(t, e.src, nil), "the run starts and sleeps")
	require.Eventually(t, func() bool {
		r := e.run(t, s.ID)
		return r != nil && r.status == enums.WORKFLOW_EXECUTION_STATUS_RUNNING
	}, 30*time.Second, 50*time.Millisecond)
	return s.ID
}

// A cancel whose signal is lost (Temporal unreachable: the route's WARN,
// CancelNotWoken) leaves its wake-up pending; the wake dispatcher's
// signal, failed too while Temporal does not answer, keeps it pending;
// once Temporal answers, the dispatcher wakes the run, which ends
// cancelled, and the wake-up ends. Before 34a0eee the run slept on,
// "Running", until the date. Found failing without the cancel's wake-up.
func TestACancelWhoseSignalIsLostStillEndsItsRun(t *testing.T) {
	e := newWakeEnv(t)
	ctx := context.Background()
	id := e.started(t)

	e.cancel(t, id)
	require.Equal(t, 1, e.lost.count(), "the route's signal was tried, and lost")
	require.True(t, e.waking(t, id), "the cancel leaves its run's wake-up pending")
	require.Nil(t, e.due(t, id), "the saga's queue has the row no more")

	refusing := &unreachableClient{Client: e.c}
	require.Equal(t, 1, e.dispatch(t, e.wakes, refusing), "the wake dispatcher claims the cancel's wake-up")
	require.Equal(t, 1, refusing.count(), "it signalled, and failed")
	require.True(t, e.waking(t, id), "a failed signal leaves the wake-up pending")
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_RUNNING, e.run(t, id).status)

	e.wakeUntilDone(t, id)
	closed := e.endsCancelled(t, id)

	// A late dispatcher's claim of the wake-up, replayed after the run
	// closed: nothing started, nothing pending again.
	late := rows.Due{Key: id.String(), Drive: 1, Status: scheduled.StatusCancelled}
	started, err := e.wakes.Start(ctx, e.c, late)
	require.NoError(t, err)
	require.False(t, started)
	q := e.f.store.WakeQueue()
	require.NoError(t, q.MarkDispatched(ctx, nil, []rows.Due{late}, rows.Recheck{After: time.Minute, Max: time.Hour}))
	require.NoError(t, q.DeferDispatch(ctx, []rows.Due{late}, time.Second))
	require.False(t, e.waking(t, id))
	require.Equal(t, *closed, *e.run(t, id), "the closed run, no other")
	require.Zero(t, e.dispatch(t, e.wakes, nil))
	require.Zero(t, e.dispatch(t, e.src, nil))
}

// A scheduled PIX cancelled before its run started: the wake dispatcher
// ends the cancel's wake-up without starting a run, and the saga's
// dispatcher starts none either.
func TestACancelBeforeItsRunStartedStartsNoRun(t *testing.T) {
	e := newWakeEnv(t)
	s := e.f.schedule("acc-maria", 15_000, time.Now().AddDate(0, 0, 30))
	e.cancel(t, s.ID)
	require.True(t, e.waking(t, s.ID), "the cancel leaves its run's wake-up pending")

	require.Zero(t, e.dispatch(t, e.src, nil), "a cancelled row is no start")
	require.Equal(t, 1, e.dispatch(t, e.wakes, nil))
	require.False(t, e.waking(t, s.ID), "no run to wake: the wake-up ends")
	require.Nil(t, e.run(t, s.ID), "no run started for a cancelled row")
	require.Zero(t, e.dispatch(t, e.wakes, nil))
	requireOneConclusion(t, e.f, s.ID)
}

// Dispatchers late or twice: the records of a claim of the saga's queue
// made before the cancel do not put the cancelled row back in it; a
// wake-up claimed twice (a lease run out) and replayed changes nothing
// once ended, and starts no run.
func TestALateOrSecondDispatchChangesNothing(t *testing.T) {
	e := newWakeEnv(t)
	ctx := context.Background()
	q, wq := e.f.store.Queue(), e.f.store.WakeQueue()
	s := e.f.schedule("acc-maria", 15_000, time.Now().AddDate(0, 0, 30))
	before, err := q.Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, before, 1)

	e.cancel(t, s.ID)
	recheck := rows.Recheck{After: time.Minute, Max: time.Hour}
	require.NoError(t, q.MarkDispatched(ctx, before, nil, recheck))
	require.NoError(t, q.MarkDispatched(ctx, nil, before, recheck))
	require.NoError(t, q.DeferDispatch(ctx, before, time.Hour))
	require.Nil(t, e.due(t, s.ID), "the stale claim's records do not make the cancelled row due")
	require.True(t, e.waking(t, s.ID), "nor end its wake-up")

	first, err := wq.Claim(ctx, 10, time.Millisecond)
	require.NoError(t, err)
	require.Len(t, first, 1)
	time.Sleep(5 * time.Millisecond) // the first claim's lease runs out
	second, err := wq.Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, second, 1)

	for _, claim := range [][]rows.Due{second, first, second} {
		started, err := e.wakes.Start(ctx, e.c, claim[0])
		require.NoError(t, err)
		require.False(t, started)
		require.NoError(t, wq.MarkDispatched(ctx, nil, claim, recheck))
		require.NoError(t, wq.DeferDispatch(ctx, claim, time.Millisecond))
		require.False(t, e.waking(t, s.ID), "ended, and never pending again")
	}
	require.Nil(t, e.run(t, s.ID), "no run started for a cancelled row")
	require.Zero(t, e.dispatch(t, e.wakes, nil))
	require.Zero(t, e.dispatch(t, e.src, nil))
	requireOneConclusion(t, e.f, s.ID)
}

// A build before the wake queue (a rollback: the migration stays, the old
// build's dispatchers run; or a rolling upgrade) dispatches pix_scheduled
// with the same claim, and starts a run for any row due there whatever its
// status: after a cancel, its dispatcher must find no row due, ever (under
// 34a0eee's design the cancelled row stayed due there, and an old build
// started a run per cancelled row every DISPATCH_RECHECK_AFTER). Found
// failing on 34a0eee.
func TestAnOldBuildSeesNoCancelledRowDue(t *testing.T) {
	e := newWakeEnv(t)
	ctx := context.Background()
	id := e.started(t)
	e.cancel(t, id) // its signal lost: the wake-up pending

	var due int
	require.NoError(t, e.f.s.Pool().QueryRow(ctx,
		`SELECT count(*) FROM pix_scheduled WHERE status <> 'scheduled' AND dispatch_due_at IS NOT NULL`).Scan(&due))
	require.Zero(t, due, "no concluded row is due in the saga's queue")
	claimed, err := e.f.store.Queue().Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, claimed, "the saga's queue, as any build claims it, has nothing due")
	require.True(t, e.waking(t, id), "the wake-up waits in its own queue")
	e.wakeUntilDone(t, id)
	e.endsCancelled(t, id)
}

// A start claimed before the cancel and issued after it (a dispatcher of
// the saga's queue slow between its claim and its start; or an old build's),
// after the wake dispatcher found no run to wake and ended the wake-up:
// the run it starts reads the row first and ends cancelled at once,
// nothing debited, and its records do not make the row due again.
func TestAStaleStartAfterTheCancelEndsCancelled(t *testing.T) {
	e := newWakeEnv(t)
	ctx := context.Background()
	q := e.f.store.Queue()
	s := e.f.schedule("acc-maria", 15_000, time.Now().AddDate(0, 0, 30))
	before, err := q.Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, before, 1)

	e.cancel(t, s.ID)
	require.Equal(t, 1, e.dispatch(t, e.wakes, nil))
	require.False(t, e.waking(t, s.ID), "no run open yet: the wake-up ends")

	started, err := e.src.Start(ctx, e.c, before[0])
	require.NoError(t, err)
	require.True(t, started, "the stale claim starts a run")
	require.NoError(t, q.MarkDispatched(ctx, before, nil, rows.Recheck{After: time.Minute, Max: time.Hour}))
	require.Nil(t, e.due(t, s.ID), "its records do not make the row due again")
	e.endsCancelled(t, s.ID)
	require.Zero(t, e.dispatch(t, e.src, nil))
	require.Zero(t, e.dispatch(t, e.wakes, nil))
}

// requireOneConclusion: the scheduled PIX's events are its creation and one
// conclusion, cancelled.
func requireOneConclusion(t *testing.T, f *fixture, id uuid.UUID) {
	t.Helper()
	evs := f.events(id.String())
	require.Len(t, evs, 2, "created, concluded: one conclusion")
	require.Equal(t, scheduled.EventConcluded, evs[1]["event_type"])
	require.Equal(t, scheduled.StatusCancelled, evs[1]["status"])
}
